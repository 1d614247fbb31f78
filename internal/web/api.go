package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/webauth"
)

// JobJSON is the answer of GET /v1/job. Its field names are a contract
// (issue 14): scripts and the dashboard read them.
type JobJSON struct {
	Name        string         `json:"name"`
	State       string         `json:"state"`
	StartTime   *time.Time     `json:"start_time"` // null before the job starts
	Now         time.Time      `json:"now"`
	Parallelism int            `json:"parallelism"`
	Operators   []OperatorJSON `json:"operators"`
	Edges       []EdgeJSON     `json:"edges"`
	// Group: in group mode only (group.go).
	Group *GroupJSON `json:"group,omitempty"`
}

// OperatorJSON is one operator, its counters summed over its subtasks.
type OperatorJSON struct {
	ID          int    `json:"id"`
	Name        string `json:"name"`
	Parallelism int    `json:"parallelism"`
	// SideOutputOf is the operator whose late events this one receives.
	SideOutputOf *int  `json:"side_output_of,omitempty"`
	RecordsIn    int64 `json:"records_in"`
	RecordsOut   int64 `json:"records_out"`
	// RecordsPerSec is the input rate over the last window (a source's:
	// its output rate, as it has no input); RecordsOutPerSec the output's.
	RecordsPerSec    float64 `json:"records_per_sec"`
	RecordsOutPerSec float64 `json:"records_out_per_sec"`
	// BackpressureRatio is the share of wall time the subtasks spent
	// blocked on full output queues over the window (0..1); Backpressure
	// says it in Flink's words: OK (< 0.1), LOW (< 0.5), HIGH.
	BackpressureRatio float64 `json:"backpressure_ratio"`
	Backpressure      string  `json:"backpressure"`
	// WatermarkMs is each subtask's input watermark in epoch ms: null
	// before its first, 9223372036854775807 after its input ended.
	// WatermarkLagMs is processing time minus it (null when there is none
	// or it ended).
	WatermarkMs    []*int64 `json:"watermark_ms"`
	WatermarkLagMs []*int64 `json:"watermark_lag_ms"`
	// WatermarkPace is how many seconds of event time the operator's
	// lowest watermark moved per second of wall time over the rate window
	// (null until the window has two watermarks): 1 keeps up with the
	// clock, 0 is stalled, and a replay of old data runs far above 1.
	// WatermarkBehind says the job falls behind its input: a lag above a
	// minute that grows (pace below 0.5). A large lag alone is not a
	// warning: a job replaying last week's events has one for ever.
	WatermarkPace      *float64 `json:"watermark_pace"`
	WatermarkBehind    bool     `json:"watermark_behind"`
	LateRecordsDropped int64    `json:"late_records_dropped"`
	DeadLetters        int64    `json:"dead_letters"`
	BadRecordsSkipped  int64    `json:"bad_records_skipped"`
	// StateKeys and StateBytes are the operator's keyed state on the heap
	// at its subtasks' last samples: keys, and an estimate of the bytes
	// (internal/state's Usage); StateBytesPerKey divides them (null
	// without keys). Zero for operators that keep no keyed state on the
	// heap or do not report it (operators built on Process do).
	StateKeys        int64    `json:"state_keys"`
	StateBytes       int64    `json:"state_bytes"`
	StateBytesPerKey *float64 `json:"state_bytes_per_key"`
}

// EdgeJSON is an edge of the job graph.
type EdgeJSON struct {
	From    int    `json:"from"`
	To      int    `json:"to"`
	Kind    string `json:"kind"` // forward, hash, rebalance, broadcast
	Chained bool   `json:"chained"`
}

// CheckpointsJSON is the answer of GET /v1/checkpoints.
type CheckpointsJSON struct {
	Counts struct {
		Completed int64 `json:"completed"`
		Failed    int64 `json:"failed"`
		Aborted   int64 `json:"aborted"`
		Restarts  int64 `json:"restarts"`
	} `json:"counts"`
	// History holds the last metrics.HistorySize finished checkpoints and
	// savepoints, newest first.
	History        []CheckpointJSON `json:"history"`
	LatestRestored *RestoredJSON    `json:"latest_restored"` // null: started empty
}

// CheckpointJSON is one finished checkpoint or savepoint.
type CheckpointJSON struct {
	ID          int64     `json:"id"`
	Status      string    `json:"status"` // COMPLETED, FAILED, ABORTED
	Savepoint   bool      `json:"savepoint"`
	TriggerTime time.Time `json:"trigger_time"`
	DurationMs  float64   `json:"duration_ms"`
	SizeBytes   int64     `json:"size_bytes"`
	AlignmentMs float64   `json:"alignment_ms"`
}

// RestoredJSON is the checkpoint or savepoint the job last started from.
type RestoredJSON struct {
	ID          int64     `json:"id"`
	Path        string    `json:"path"`
	RestoreTime time.Time `json:"restore_time"`
}

// SavepointJSON is the answer of POST /v1/savepoints and /v1/stop.
type SavepointJSON struct {
	Path string `json:"path"`
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	webauth.WriteJSON(w, http.StatusOK, s.job())
}

// job builds GET /v1/job's answer from the graph and the live counters.
func (s *Server) job() *JobJSON {
	j := s.cfg.Job()
	now := s.cfg.Now()
	out := &JobJSON{Name: j.Name, State: j.State, Now: now, Parallelism: j.Parallelism,
		Operators: make([]OperatorJSON, len(j.Operators)), Edges: make([]EdgeJSON, len(j.Edges))}
	if !j.Start.IsZero() {
		out.StartTime = &j.Start
	}
	subs := map[string][]*metrics.Operator{}
	for _, o := range s.cfg.Registry.Snapshot() {
		subs[o.Name] = append(subs[o.Name], o)
	}
	par := parallelism(j)
	hasInput := map[int]bool{}
	for _, e := range j.Edges {
		hasInput[e.To] = true
	}
	rates := s.rates.rates(take(s.cfg.Registry, now, par), par)
	procNow := s.cfg.Registry.Now // the job's processing time, as the Prometheus lag
	if procNow == nil {
		procNow = time.Now
	}
	pnow := procNow().UnixMilli()
	for i, op := range j.Operators {
		o := OperatorJSON{ID: op.ID, Name: op.Name, Parallelism: op.Parallelism,
			WatermarkMs: make([]*int64, op.Parallelism), WatermarkLagMs: make([]*int64, op.Parallelism)}
		if op.SideOutputOf >= 0 {
			o.SideOutputOf = &op.SideOutputOf
		}
		for _, m := range subs[op.Name] {
			o.RecordsIn += m.RecordsIn.Load()
			o.RecordsOut += m.RecordsOut.Load()
			o.LateRecordsDropped += m.LateDropped.Load()
			o.DeadLetters += m.DeadLetters.Load()
			o.BadRecordsSkipped += m.BadRecordsSkipped.Load()
			if m.Subtask < 0 || m.Subtask >= op.Parallelism {
				continue // a subtask of an earlier attempt at a higher parallelism
			}
			o.StateKeys += m.StateKeys.Load()
			o.StateBytes += m.StateBytes.Load()
			if wm := m.Watermark.Load(); wm != math.MinInt64 {
				o.WatermarkMs[m.Subtask] = &wm
				if wm != math.MaxInt64 {
					lag := pnow - wm
					o.WatermarkLagMs[m.Subtask] = &lag
				}
			}
		}
		rt := rates[op.Name]
		o.RecordsPerSec, o.RecordsOutPerSec, o.BackpressureRatio = round(rt.in), round(rt.out), round(rt.backpressure)
		if rt.wmPaced {
			pace := round(rt.wmPace)
			o.WatermarkPace = &pace
			o.WatermarkBehind = rt.wmPace < behindPace && slices.ContainsFunc(o.WatermarkLagMs, func(lag *int64) bool {
				return lag != nil && *lag > behindLagMs
			})
		}
		if !hasInput[op.ID] && op.SideOutputOf < 0 {
			o.RecordsPerSec = o.RecordsOutPerSec
		}
		o.Backpressure = level(o.BackpressureRatio)
		if o.StateKeys > 0 {
			bpk := round(float64(o.StateBytes) / float64(o.StateKeys))
			o.StateBytesPerKey = &bpk
		}
		out.Operators[i] = o
	}
	for i, e := range j.Edges {
		out.Edges[i] = EdgeJSON{From: e.From, To: e.To, Kind: e.Kind, Chained: e.Chained}
	}
	out.Group = s.group()
	return out
}

// level is Flink's backpressure status of a ratio.
func level(ratio float64) string {
	switch {
	case ratio < 0.1:
		return "OK"
	case ratio < 0.5:
		return "LOW"
	default:
		return "HIGH"
	}
}

// A watermark is behind when its lag is above behindLagMs and it moves at
// less than behindPace of the wall clock.
const (
	behindLagMs = 60_000
	behindPace  = 0.5
)

// round keeps three decimals: rates are estimates, and long fractions
// only make the JSON harder to read.
func round(x float64) float64 { return math.Round(x*1000) / 1000 }

func (s *Server) getCheckpoints(w http.ResponseWriter, r *http.Request) {
	webauth.WriteJSON(w, http.StatusOK, s.checkpoints())
}

func (s *Server) checkpoints() *CheckpointsJSON {
	c := &s.cfg.Registry.Checkpoints
	out := &CheckpointsJSON{}
	out.Counts.Completed, out.Counts.Failed = c.Completed.Load(), c.Failed.Load()
	out.Counts.Aborted, out.Counts.Restarts = c.Aborted.Load(), c.Restarts.Load()
	h := c.History()
	out.History = make([]CheckpointJSON, 0, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		r := h[i]
		out.History = append(out.History, CheckpointJSON{ID: r.ID, Status: r.Status, Savepoint: r.Savepoint,
			TriggerTime: r.Trigger, DurationMs: ms(r.Duration()), SizeBytes: r.SizeBytes, AlignmentMs: ms(r.Alignment)})
	}
	if r, ok := c.Restored(); ok {
		out.LatestRestored = &RestoredJSON{ID: r.ID, Path: r.Path, RestoreTime: r.Time}
	}
	return out
}

func ms(d time.Duration) float64 { return round(float64(d) / 1e6) }

// postSavepoint serves POST /v1/savepoints and, with stop, /v1/stop. The
// body is optional; if there is one it is {"path": NAME} as JSON (a
// browser cannot send JSON across sites without a preflight, which this
// server does not answer). Without a path the savepoint is named after
// the time.
func (s *Server) postSavepoint(stop bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Path string `json:"path"`
		}
		if r.ContentLength != 0 || r.Header.Get("Content-Type") != "" {
			if !webauth.RequireJSON(w, r) {
				return
			}
			dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
				webauth.Deny(w, http.StatusBadRequest, fmt.Sprintf(`body: %v: want {"path": NAME} or nothing`, err))
				return
			}
		}
		if s.cfg.Savepoint == nil {
			webauth.Deny(w, http.StatusConflict, s.cfg.NoSavepoint)
			return
		}
		if req.Path == "" {
			req.Path = "savepoint-" + s.cfg.Now().UTC().Format("20060102-150405.000")
		}
		if err := os.MkdirAll(s.cfg.SavepointDir, 0o755); err != nil {
			webauth.Deny(w, http.StatusInternalServerError, err.Error())
			return
		}
		path, err := control.Resolve(s.cfg.SavepointDir, req.Path)
		if err != nil {
			webauth.Deny(w, http.StatusForbidden, err.Error())
			return
		}
		// A savepoint may take up to the checkpoint timeout: the server's
		// write timeout is for clients that stall, not for this wait.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.SavepointTimeout + webauth.WriteTimeout))
		got, err := s.cfg.Savepoint(r.Context(), path, stop)
		if err != nil {
			webauth.Deny(w, http.StatusConflict, err.Error())
			return
		}
		webauth.WriteJSON(w, http.StatusOK, SavepointJSON{Path: got})
	}
}
