// Package metrics keeps per-operator, per-subtask counters with plain
// atomics (cheap enough to bump once per batch on the hot path) and exposes
// them to Prometheus through a client_golang Collector that reads them at
// scrape time.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/weirstream/weir/internal/webauth"
)

// Operator holds the metrics of one operator subtask.
type Operator struct {
	Name    string
	Subtask int

	RecordsIn   atomic.Int64
	RecordsOut  atomic.Int64
	LateDropped atomic.Int64
	// BadRecordsSkipped counts malformed input records skipped by a source.
	BadRecordsSkipped atomic.Int64
	// DeadLetters counts malformed input records sent to a dead-letter sink.
	DeadLetters atomic.Int64
	// NotifyErrors counts failed checkpoint-complete notifications.
	NotifyErrors atomic.Int64
	// Watermark is the operator's current input watermark (ms), Min if none.
	Watermark atomic.Int64
	// BackpressureNanos is the time spent blocked sending to a full queue.
	BackpressureNanos atomic.Int64
	// StateKeys and StateBytes are the subtask's keyed state at its last
	// sample (keys, and an estimate of its bytes on the heap: see
	// internal/state's Usage); StatePeakKeys and StatePeakBytes are the
	// sample with the most keys, which outlives the state (a bounded job's
	// operators free theirs at the end). Zero for operators that keep no
	// keyed state on the heap, or do not report it.
	StateKeys, StateBytes         atomic.Int64
	StatePeakKeys, StatePeakBytes atomic.Int64
}

// SetState records a sample of the subtask's keyed state. Only the
// subtask's own goroutine calls it.
func (o *Operator) SetState(keys, bytes int64) {
	o.StateKeys.Store(keys)
	o.StateBytes.Store(bytes)
	if keys >= o.StatePeakKeys.Load() && keys > 0 {
		o.StatePeakKeys.Store(keys)
		o.StatePeakBytes.Store(bytes)
	}
}

// Checkpoints are the job's checkpoint metrics.
type Checkpoints struct {
	Completed atomic.Int64
	Failed    atomic.Int64
	Aborted   atomic.Int64
	LastID    atomic.Int64
	// LastDurationNanos is trigger to completion of the last checkpoint.
	LastDurationNanos atomic.Int64
	// LastWriteNanos is the time spent writing its files and metadata.
	LastWriteNanos atomic.Int64
	// LastSizeBytes is the size of its files.
	LastSizeBytes atomic.Int64
	// AlignmentNanos adds up the time tasks held input channels back while
	// aligning barriers.
	AlignmentNanos atomic.Int64
	Restarts       atomic.Int64
	// RestoredKeyGroups and RestoredBytes add up the keyed state restored
	// from changelog topics (group mode): key groups, and their bytes.
	RestoredKeyGroups atomic.Int64
	RestoredBytes     atomic.Int64

	// history of finished checkpoints and the last restore (history.go).
	history history
}

// Registry holds every operator's metrics of one job.
type Registry struct {
	Job         string
	Checkpoints Checkpoints
	// Now is the processing-time clock for the watermark lag (default
	// time.Now).
	Now func() time.Time
	// Group is what the process owns in group mode (group.go).
	Group Group
	mu    struct {
		sync.Mutex
		ops map[opKey]*Operator
	}
}

type opKey struct {
	name    string
	subtask int
}

// NewRegistry returns an empty registry for the named job.
func NewRegistry(job string) *Registry {
	r := &Registry{Job: job}
	r.mu.ops = make(map[opKey]*Operator)
	return r
}

// Operator returns (creating on first use) the metrics of one subtask.
func (r *Registry) Operator(name string, subtask int) *Operator {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := opKey{name, subtask}
	if o := r.mu.ops[k]; o != nil {
		return o
	}
	o := &Operator{Name: name, Subtask: subtask}
	o.Watermark.Store(math.MinInt64)
	r.mu.ops[k] = o
	return o
}

// Snapshot returns every operator's metrics sorted by name and subtask.
func (r *Registry) Snapshot() []*Operator {
	r.mu.Lock()
	out := make([]*Operator, 0, len(r.mu.ops))
	for _, o := range r.mu.ops {
		out = append(out, o)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Subtask < out[j].Subtask
	})
	return out
}

// Sum adds a counter over every subtask of every operator.
func (r *Registry) Sum(f func(*Operator) int64) int64 {
	var n int64
	for _, o := range r.Snapshot() {
		n += f(o)
	}
	return n
}

var (
	labels       = []string{"job", "operator", "subtask"}
	descIn       = prometheus.NewDesc("weir_records_in_total", "Records received by the operator subtask.", labels, nil)
	descOut      = prometheus.NewDesc("weir_records_out_total", "Records emitted by the operator subtask.", labels, nil)
	descLate     = prometheus.NewDesc("late_records_dropped_total", "Events dropped because they arrived after their window's allowed lateness.", labels, nil)
	descSkipped  = prometheus.NewDesc("weir_bad_records_skipped_total", "Malformed input records skipped by a source.", labels, nil)
	descDead     = prometheus.NewDesc("weir_dead_letters_total", "Malformed input records a source sent to its dead-letter sink.", labels, nil)
	descNotify   = prometheus.NewDesc("weir_checkpoint_notify_errors_total", "Failed checkpoint-complete notifications of source readers (for example offset commits for monitoring).", labels, nil)
	descWM       = prometheus.NewDesc("weir_watermark_ms", "Current input watermark of the operator subtask, epoch milliseconds (absent before the first watermark).", labels, nil)
	descLag      = prometheus.NewDesc("weir_watermark_lag_seconds", "Processing time minus the operator subtask's current watermark (absent before the first watermark and after the last).", labels, nil)
	ckLabels     = []string{"job"}
	descCkDone   = prometheus.NewDesc("weir_checkpoints_completed_total", "Checkpoints completed.", ckLabels, nil)
	descCkFailed = prometheus.NewDesc("weir_checkpoints_failed_total", "Checkpoints that could not be written.", ckLabels, nil)
	descCkAbort  = prometheus.NewDesc("weir_checkpoints_aborted_total", "Checkpoints aborted by the timeout.", ckLabels, nil)
	descCkLast   = prometheus.NewDesc("weir_checkpoint_last_id", "Id of the last completed checkpoint.", ckLabels, nil)
	descCkDur    = prometheus.NewDesc("weir_checkpoint_last_duration_seconds", "Trigger to completion of the last checkpoint.", ckLabels, nil)
	descCkSize   = prometheus.NewDesc("weir_checkpoint_last_size_bytes", "Size of the last completed checkpoint.", ckLabels, nil)
	descCkAlign  = prometheus.NewDesc("weir_checkpoint_alignment_seconds_total", "Time input channels were held back aligning barriers.", ckLabels, nil)
	descRestarts = prometheus.NewDesc("weir_job_restarts_total", "Restarts of the job from a checkpoint after a failure.", ckLabels, nil)
	descRestKG   = prometheus.NewDesc("weir_state_restored_key_groups_total", "Key groups of keyed state restored from changelog topics (group mode).", ckLabels, nil)
	descRestB    = prometheus.NewDesc("weir_state_restored_bytes_total", "Bytes of keyed state restored from changelog topics (group mode).", ckLabels, nil)
	descBackpres = prometheus.NewDesc("weir_backpressure_seconds_total", "Time spent blocked on a full output queue.", labels, nil)
)

// Describe implements prometheus.Collector.
func (r *Registry) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIn, descOut, descLate, descSkipped, descWM, descLag, descBackpres,
		descCkDone, descCkFailed, descCkAbort, descCkLast, descCkDur, descCkSize, descCkAlign, descRestarts, descRestKG, descRestB} {
		ch <- d
	}
	describeGroup(ch)
}

// Collect implements prometheus.Collector.
func (r *Registry) Collect(ch chan<- prometheus.Metric) {
	r.collectGroup(ch)
	c := &r.Checkpoints
	for _, x := range []struct {
		d *prometheus.Desc
		t prometheus.ValueType
		v float64
	}{
		{descCkDone, prometheus.CounterValue, float64(c.Completed.Load())},
		{descCkFailed, prometheus.CounterValue, float64(c.Failed.Load())},
		{descCkAbort, prometheus.CounterValue, float64(c.Aborted.Load())},
		{descCkLast, prometheus.GaugeValue, float64(c.LastID.Load())},
		{descCkDur, prometheus.GaugeValue, float64(c.LastDurationNanos.Load()) / 1e9},
		{descCkSize, prometheus.GaugeValue, float64(c.LastSizeBytes.Load())},
		{descCkAlign, prometheus.CounterValue, float64(c.AlignmentNanos.Load()) / 1e9},
		{descRestarts, prometheus.CounterValue, float64(c.Restarts.Load())},
		{descRestKG, prometheus.CounterValue, float64(c.RestoredKeyGroups.Load())},
		{descRestB, prometheus.CounterValue, float64(c.RestoredBytes.Load())},
	} {
		ch <- prometheus.MustNewConstMetric(x.d, x.t, x.v, r.Job)
	}
	for _, o := range r.Snapshot() {
		lv := []string{r.Job, o.Name, strconv.Itoa(o.Subtask)}
		ch <- prometheus.MustNewConstMetric(descIn, prometheus.CounterValue, float64(o.RecordsIn.Load()), lv...)
		ch <- prometheus.MustNewConstMetric(descOut, prometheus.CounterValue, float64(o.RecordsOut.Load()), lv...)
		ch <- prometheus.MustNewConstMetric(descLate, prometheus.CounterValue, float64(o.LateDropped.Load()), lv...)
		ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.CounterValue, float64(o.BadRecordsSkipped.Load()), lv...)
		ch <- prometheus.MustNewConstMetric(descDead, prometheus.CounterValue, float64(o.DeadLetters.Load()), lv...)
		ch <- prometheus.MustNewConstMetric(descNotify, prometheus.CounterValue, float64(o.NotifyErrors.Load()), lv...)
		if wm := o.Watermark.Load(); wm != math.MinInt64 && wm != math.MaxInt64 {
			ch <- prometheus.MustNewConstMetric(descWM, prometheus.GaugeValue, float64(wm), lv...)
			lag := float64(r.now().UnixMilli()-wm) / 1e3
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, lag, lv...)
		}
		ch <- prometheus.MustNewConstMetric(descBackpres, prometheus.CounterValue, float64(o.BackpressureNanos.Load())/1e9, lv...)
	}
}

// Server serves /metrics for a registry.
type Server struct {
	ln    net.Listener
	srv   *http.Server
	guard *webauth.Guard
}

// Serve starts an HTTP server on addr exposing /metrics. An address without
// a host (":9249" or "9249") binds to loopback: exposing metrics beyond the
// machine must be asked for with an explicit host such as 0.0.0.0, and then
// needs the job's token (sent as "Authorization: Bearer TOKEN", which
// Prometheus' authorization.credentials_file does). On loopback the
// metrics are readable without the token, by GET with a Host naming the
// loopback address (no DNS rebinding) and no CORS: another user of the
// machine can read counters and watermarks, nothing more.
func Serve(addr string, reg *Registry, token string) (*Server, error) {
	pr := prometheus.NewRegistry()
	if err := pr.Register(reg); err != nil {
		return nil, err
	}
	ln, err := webauth.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("weir: metrics listener on %s: %w", addr, err)
	}
	bound := ln.Addr().String()
	if webauth.IsLoopback(bound) {
		token = ""
	} else if token == "" {
		ln.Close()
		return nil, fmt.Errorf("weir: metrics on %s: off loopback they need the job's token, which is written to the checkpoint directory: set Checkpointing, or serve on loopback", bound)
	}
	guard, err := webauth.NewGuard(bound, token)
	if err != nil {
		ln.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(pr, promhttp.HandlerOpts{}))
	s := &Server{ln: ln, srv: webauth.NewServer(guard.Wrap(mux)), guard: guard}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener was closed under us; nothing to report to
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// NeedsToken reports whether requests need the job's token.
func (s *Server) NeedsToken() bool { return s.guard.NeedsToken() }

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
