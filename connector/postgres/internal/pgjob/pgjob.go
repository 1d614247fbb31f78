// Package pgjob is the workload of the PostgreSQL sink's recovery tests,
// shared by the in-process test (connector/postgres) and the process the
// SIGKILL test kills (internal/crashjob): a deterministic input (generated
// in memory, or read from the topic "events" of an embedded log that Fill
// wrote), per-key tumbling-window sums and a per-key running count, both
// written to PostgreSQL by an Upsert or a Transactional sink.
package pgjob

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/connector/postgres"
	"github.com/weirstream/weir/internal/pace"
	"github.com/weirstream/weir/internal/testing/crashtest"
)

// Event is one input record.
type Event struct {
	Key string
	TS  int64
	V   int64
}

// Count is the running count of a key.
type Count struct {
	Key string
	N   int64
}

// Config describes one run.
type Config struct {
	DSN string
	// Mode is "upsert" or "tx".
	Mode string
	// Prefix starts the names of the tables (Setup creates them).
	Prefix string
	Events int64
	// Rate limits events per second (0: unlimited).
	Rate float64
	// Before runs on every event, in the job (to inject failures).
	Before func(Event)
	// Wrap, if set, wraps the generated source (tests use it to take
	// checkpoints at fixed places in the input: weirtest.CheckpointEvery).
	Wrap func(weir.RestorableSource[Event]) weir.Source[Event]
	// LogDir, if set, is the data directory of an embedded log whose topic
	// "events" Fill wrote: the job reads it instead of generating events.
	LogDir string
}

const base = int64(1_700_000_000_000)

// event is the i-th event of every run: a pure function of i.
func event(i int64) Event {
	rng := rand.New(rand.NewPCG(11, uint64(i)))
	delay := rng.Int64N(1500)
	if rng.IntN(50) == 0 {
		delay += rng.Int64N(20_000) // late: beyond the watermark bound
	}
	return Event{Key: fmt.Sprintf("k%02d", rng.IntN(30)), TS: base + i*10 - delay, V: i}
}

// Fill writes events [0, n) as JSON into the one-partition topic "events"
// of the log in dir, creating it, unless it already holds them.
func Fill(dir string, n int64) error {
	tp, err := wlog.OpenTopic(dir, "events")
	if err != nil {
		if tp, err = wlog.CreateTopic(dir, "events", wlog.TopicConfig{Partitions: 1}); err != nil {
			return err
		}
	}
	w, err := tp.OpenWriter(0)
	if err != nil {
		return err
	}
	defer w.Close()
	next := w.NextOffset()
	recs := make([]wlog.Record, 0, 1000)
	for i := next; i < n; i++ {
		e := event(i)
		v, err := json.Marshal(e)
		if err != nil {
			return err
		}
		recs = append(recs, wlog.Record{Timestamp: e.TS, Key: []byte(e.Key), Value: v})
		if len(recs) == cap(recs) || i == n-1 {
			if _, err := w.Append(recs); err != nil {
				return err
			}
			recs = recs[:0]
		}
	}
	return w.Sync()
}

func decodeEvent(r wlog.Record) (Event, error) {
	var e Event
	err := json.Unmarshal(r.Value, &e)
	return e, err
}

// Tables returns the names of the windows and counts tables.
func Tables(prefix string) (windows, counts string) { return prefix + "_windows", prefix + "_counts" }

// Setup creates the tables of a run (dropping earlier ones): keyed, with a
// position column, for upsert; without a key for tx, so that a duplicate
// would show.
func Setup(ctx context.Context, conn *pgx.Conn, prefix, mode string) error {
	w, c := Tables(prefix)
	var ddl []string
	switch mode {
	case "upsert":
		ddl = []string{
			"CREATE TABLE " + w + " (k text, start_ms bigint, sum bigint NOT NULL, weir_position bigint NOT NULL, PRIMARY KEY (k, start_ms))",
			"CREATE TABLE " + c + " (k text PRIMARY KEY, n bigint NOT NULL, weir_position bigint NOT NULL)",
		}
	case "tx":
		ddl = []string{
			"CREATE TABLE " + w + " (k text NOT NULL, start_ms bigint NOT NULL, sum bigint NOT NULL)",
			"CREATE TABLE " + c + " (k text NOT NULL, n bigint NOT NULL)",
		}
	default:
		return fmt.Errorf("pgjob: mode %q: want upsert or tx", mode)
	}
	for _, t := range []string{w, c, w + "_weir_staging", c + "_weir_staging"} {
		ddl = append([]string{"DROP TABLE IF EXISTS " + t}, ddl...)
	}
	for _, q := range ddl {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("pgjob: %s: %w", q, err)
		}
	}
	return nil
}

// Stats are the counters of a run's two sinks (in this process).
type Stats struct {
	Upsert [2]func() postgres.UpsertStats
	Tx     [2]func() postgres.TxStats
}

// Replayed returns how many rows the sinks found already written (upsert)
// or were given without being committed (tx): evidence that records were
// replayed.
func (s Stats) Replayed() int64 {
	var n int64
	for i := range 2 {
		if s.Upsert[i] != nil {
			n += s.Upsert[i]().Skipped
		}
		if s.Tx[i] != nil {
			st := s.Tx[i]()
			n += st.Written - st.Committed
		}
	}
	return n
}

// Build builds the job; opts are the job's options (checkpointing,
// restarts).
func Build(cfg Config, opts ...weir.JobOption) (*weir.Job, Stats) {
	job := weir.NewJob("pgjob", append([]weir.JobOption{weir.Parallelism(2)}, opts...)...)
	// One split: with several, which events are late depends on how the
	// splits' watermarks interleave in time, and runs would differ.
	ws := weir.BoundedOutOfOrderness(time.Second, func(e Event) time.Time { return time.UnixMilli(e.TS) })
	var src *weir.Stream[Event]
	if cfg.LogDir != "" {
		var ls weir.RestorableSource[Event] = wlog.Source(cfg.LogDir, "events", decodeEvent, wlog.StopAt(map[int]int64{0: cfg.Events}))
		if cfg.Rate > 0 {
			ls = paced[Event]{ls, cfg.Rate}
		}
		src = weir.FromSource(job, "events", ls, ws, weir.UID("events"))
	} else {
		gen := weir.GeneratorSource(weir.GeneratorConfig{Count: cfg.Events, Seed: 11, Rate: cfg.Rate, Splits: 1},
			func(i int64, _ *rand.Rand) Event { return event(i) })
		if cfg.Wrap != nil {
			gen = cfg.Wrap(gen.(weir.RestorableSource[Event]))
		}
		src = weir.FromSource(job, "events", gen, ws, weir.UID("events"))
	}
	if cfg.Before != nil {
		src = weir.Map(src, func(e Event) Event { cfg.Before(e); return e })
	}
	byKey := weir.KeyBy(src, func(e Event) string { return e.Key })
	sums := weir.Aggregate(weir.Window(byKey, weir.Tumbling(time.Second)), weir.Sum(func(e Event) int64 { return e.V }), weir.UID("sums"))
	counts := weir.ProcessWith(byKey, func() weir.KeyedProcessFunction[string, Event, Count] { return &runningCount{} }, weir.UID("counter"))
	wt, ct := Tables(cfg.Prefix)
	var st Stats
	switch cfg.Mode {
	case "upsert":
		ws := postgres.Upsert(cfg.DSN, postgres.Table{Name: wt, Key: []string{"k", "start_ms"}, Columns: []string{"sum"}},
			func(r weir.WindowResult[string, int64]) ([]any, int64) {
				return []any{r.Key, r.Start.UnixMilli(), r.Value}, r.End.UnixMilli()
			})
		cs := postgres.Upsert(cfg.DSN, postgres.Table{Name: ct, Key: []string{"k"}, Columns: []string{"n"}},
			func(c Count) ([]any, int64) { return []any{c.Key, c.N}, c.N }, postgres.FlushRows(5))
		weir.To(sums, weir.Sink[weir.WindowResult[string, int64]](ws), weir.UID("windows-sink"))
		weir.To(counts, weir.Sink[Count](cs), weir.UID("counts-sink"))
		st.Upsert = [2]func() postgres.UpsertStats{ws.Stats, cs.Stats}
	default:
		ws := postgres.Transactional(cfg.DSN, postgres.Table{Name: wt, Columns: []string{"k", "start_ms", "sum"}},
			func(r weir.WindowResult[string, int64]) []any { return []any{r.Key, r.Start.UnixMilli(), r.Value} },
			postgres.FlushRows(200))
		cs := postgres.Transactional(cfg.DSN, postgres.Table{Name: ct, Columns: []string{"k", "n"}},
			func(c Count) []any { return []any{c.Key, c.N} })
		weir.To(sums, weir.Sink[weir.WindowResult[string, int64]](ws), weir.UID("windows-sink"))
		weir.To(counts, weir.Sink[Count](cs), weir.UID("counts-sink"))
		st.Tx = [2]func() postgres.TxStats{ws.Stats, cs.Stats}
	}
	return job, st
}

// runningCount emits the count of a key every 10 events of that key.
type runningCount struct {
	n *weir.ValueState[string, int64]
}

func (c *runningCount) Open(rc *weir.RuntimeContext[string]) error {
	c.n = weir.NewValueState[int64](rc, "n")
	return nil
}

func (c *runningCount) ProcessElement(ctx *weir.KeyedContext[string, Count], e Event) error {
	n, _ := c.n.Value()
	n++
	c.n.Update(n)
	if n%10 == 0 {
		ctx.Emit(Count{Key: ctx.Key(), N: n})
	}
	return nil
}

// Dump returns the content of a run's tables, one line per row, sorted
// (duplicates kept), and the number of rows left in staging tables.
func Dump(ctx context.Context, conn *pgx.Conn, prefix string) (rows []string, staged int64, err error) {
	w, c := Tables(prefix)
	for _, q := range []string{
		"SELECT 'window ' || k || ' ' || start_ms || ' ' || sum FROM " + w,
		"SELECT 'count ' || k || ' ' || n FROM " + c,
	} {
		r, err := conn.Query(ctx, q)
		if err != nil {
			return nil, 0, fmt.Errorf("pgjob: %s: %w", q, err)
		}
		lines, err := pgx.CollectRows(r, pgx.RowTo[string])
		if err != nil {
			return nil, 0, fmt.Errorf("pgjob: %s: %w", q, err)
		}
		rows = append(rows, lines...)
	}
	slices.Sort(rows)
	for _, t := range []string{w, c} {
		var exists bool
		var n int64
		if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", t+"_weir_staging").Scan(&exists); err != nil {
			return nil, 0, err
		}
		if exists {
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+t+"_weir_staging").Scan(&n); err != nil {
				return nil, 0, err
			}
		}
		staged += n
	}
	return rows, staged, nil
}

// Diff describes how got differs from want (multisets of sorted lines), or
// returns "" when they are equal.
func Diff(want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	missing, extra := crashtest.Minus(want, got), crashtest.Minus(got, want)
	return fmt.Sprintf("%d rows, want %d; missing %d (first %q), unexpected %d (first %q)",
		len(got), len(want), len(missing), missing[:min(5, len(missing))], len(extra), extra[:min(5, len(extra))])
}

// paced limits the readers of a restorable source to rate records per
// second, reading no more than the pacer allows, so that a job reading a
// full log still takes checkpoints often (a pacing stage after the source
// would hold a whole batch, and the barriers behind it).
type paced[T any] struct {
	weir.RestorableSource[T]
	rate float64
}

func (p paced[T]) Open(ctx context.Context, sp weir.Split) (weir.SplitReader[T], error) {
	r, err := p.RestorableSource.Open(ctx, sp)
	if err != nil {
		return nil, err
	}
	return &pacedReader[T]{r.(weir.CheckpointedReader[T]), pace.New(p.rate)}, nil
}

func (p paced[T]) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[T], error) {
	r, err := p.RestorableSource.OpenAt(ctx, sp, pos)
	if err != nil {
		return nil, err
	}
	return &pacedReader[T]{r.(weir.CheckpointedReader[T]), pace.New(p.rate)}, nil
}

type pacedReader[T any] struct {
	weir.CheckpointedReader[T]
	p *pace.Pacer
}

func (r *pacedReader[T]) Read(ctx context.Context, dst []T) (int, error) {
	n, err := r.p.Allow(ctx, len(dst))
	if n == 0 || err != nil {
		return 0, err
	}
	k, err := r.CheckpointedReader.Read(ctx, dst[:n])
	r.p.Emitted(k)
	return k, err
}
