package postgres_test

import (
	"context"
	"fmt"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
	"github.com/weirstream/weir/connector/postgres/internal/pgjob"
)

// A checkpointed job with both sinks fails twice, once by a panic in an
// operator and once by losing its PostgreSQL sessions, restarts from its
// checkpoints, and leaves tables equal to those of a run without
// failures: nothing lost, nothing doubled.
func TestJobRecoversFromFailures(t *testing.T) {
	for _, mode := range []string{"upsert", "tx"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			conn := connect(t)
			ctx := context.Background()
			const events = 12000
			run := func(prefix string, rate float64, before func(pgjob.Event), opts ...weir.JobOption) *weir.Job {
				t.Helper()
				if err := pgjob.Setup(ctx, conn, prefix, mode); err != nil {
					t.Fatal(err)
				}
				job, _ := pgjob.Build(pgjob.Config{DSN: dsn(t), Mode: mode, Prefix: prefix, Events: events, Rate: rate, Before: before}, opts...)
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				if err := job.Run(rctx); err != nil {
					t.Fatalf("%s: %v", prefix, err)
				}
				return job
			}
			dump := func(prefix string) []string {
				t.Helper()
				rows, staged, err := pgjob.Dump(ctx, conn, prefix)
				if err != nil {
					t.Fatal(err)
				}
				if staged != 0 {
					t.Errorf("%s: %d rows left in the staging tables", prefix, staged)
				}
				return rows
			}

			run("ref_"+mode, 0, nil)
			want := dump("ref_" + mode)
			if len(want) < 500 {
				t.Fatalf("the reference run wrote only %d rows", len(want))
			}

			// The failures wait for checkpoints (conditions, not times): the
			// panic after the 2nd completed checkpoint, the loss of the
			// sinks' sessions after the 5th.
			var job *weir.Job
			conn2 := connect(t)
			var panicked, terminated atomic.Bool
			prefix := "fail_" + mode
			before := func(pgjob.Event) {
				done := job.Metrics().Checkpoints.Completed
				if done >= 2 && panicked.CompareAndSwap(false, true) {
					panic("injected failure")
				}
				if done >= 5 && terminated.CompareAndSwap(false, true) {
					// In the job's goroutine: failures panic (the job fails).
					tag, err := conn2.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE $1", "weir "+prefix+"%")
					if err != nil || tag.RowsAffected() == 0 {
						panic(fmt.Sprintf("terminate the sessions of sinks %s: %d terminated, %v", prefix, tag.RowsAffected(), err))
					}
				}
			}
			if err := pgjob.Setup(ctx, conn, prefix, mode); err != nil {
				t.Fatal(err)
			}
			var stats pgjob.Stats
			// Besides the periodic checkpoints (which, in flight when a
			// failure comes, make the sinks replay), one after every 1500
			// events: the failures come however slow the machine is.
			wrap := func(s weir.RestorableSource[pgjob.Event]) weir.Source[pgjob.Event] {
				return weirtest.CheckpointEvery(func() *weir.Job { return job }, s, 1500)
			}
			job, stats = pgjob.Build(pgjob.Config{DSN: dsn(t), Mode: mode, Prefix: prefix, Events: events, Rate: 8000, Before: before, Wrap: wrap},
				weir.Checkpointing(20*time.Millisecond, t.TempDir()),
				weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 10, Interval: time.Hour}))
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := job.Run(rctx); err != nil {
				t.Fatal(err)
			}
			if !panicked.Load() || !terminated.Load() {
				t.Fatalf("failures not injected (panic %v, sessions terminated %v)", panicked.Load(), terminated.Load())
			}
			if n := job.Metrics().Checkpoints.Restarts; n < 2 {
				t.Fatalf("%d restarts, want at least 2", n)
			}
			if d := pgjob.Diff(want, dump(prefix)); d != "" {
				t.Fatalf("after %d restarts: %s", job.Metrics().Checkpoints.Restarts, d)
			}
			// The failures made the job replay records (which the sinks
			// skipped or dropped): otherwise this test proves nothing. The
			// transactional sink always replays here (its staged rows of the
			// failed attempt). The upsert sink replays only when a failure
			// falls between a barrier's flush and the checkpoint's
			// completion, which no condition in this job can aim at (its
			// replays are TestKillAndRestart's, whose failpoints kill there).
			if stats.Replayed() == 0 {
				if mode == "tx" {
					t.Fatal("no record was replayed")
				}
				t.Log("upsert: no row was replayed in this run (timing)")
			}
			t.Logf("%d rows replayed; %d restarts, %d checkpoints; %d rows equal the failure-free run's", stats.Replayed(), job.Metrics().Checkpoints.Restarts, job.Metrics().Checkpoints.Completed, len(want))
		})
	}
}

// Without checkpointing, a bounded job flushes (upsert) and commits (tx)
// once at the end, with time columns as in the package example. Run twice,
// the upsert table is unchanged (every row skipped), and the transactional
// table has every row twice: each run is a new run, not a replay.
func TestJobWithoutCheckpointing(t *testing.T) {
	conn := connect(t)
	up := table(t, conn, "(ad text, minute timestamptz, clicks bigint, weir_position bigint NOT NULL, PRIMARY KEY (ad, minute))")
	log := table(t, conn, "(ad text, minute timestamptz, clicks bigint)")
	var clicks []Click
	for i := range 1000 {
		clicks = append(clicks, Click{Ad: fmt.Sprintf("ad%d", i%7), TS: time.Unix(int64(i*3), 0)})
	}
	runs := func() (*postgres.UpsertSink[weir.WindowResult[string, int64]], *postgres.TxSink[weir.WindowResult[string, int64]]) {
		job := weir.NewJob("clicks", weir.Parallelism(2))
		src := weir.FromSource(job, "clicks", weir.SliceSource(clicks),
			weir.BoundedOutOfOrderness(5*time.Second, func(c Click) time.Time { return c.TS }))
		counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(c Click) string { return c.Ad }), weir.Tumbling(time.Minute)), weir.Count[Click]())
		us := postgres.Upsert(dsn(t), postgres.Table{Name: up, Key: []string{"ad", "minute"}, Columns: []string{"clicks"}},
			func(r weir.WindowResult[string, int64]) ([]any, int64) {
				return []any{r.Key, r.Start, r.Value}, r.End.UnixMilli()
			})
		ts := postgres.Transactional(dsn(t), postgres.Table{Name: log, Columns: []string{"ad", "minute", "clicks"}},
			func(r weir.WindowResult[string, int64]) []any { return []any{r.Key, r.Start, r.Value} })
		weir.To(counts, weir.Sink[weir.WindowResult[string, int64]](us))
		weir.To(counts, weir.Sink[weir.WindowResult[string, int64]](ts))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return us, ts
	}
	us, ts := runs()
	const windows = 7 * 50 // 3000 s of clicks: 50 minutes, every ad in each
	sum := "SELECT count(*), sum(clicks)::bigint, min(minute) = 'epoch'::timestamptz FROM "
	wantRows(t, conn, sum+up, fmt.Sprint(windows, " 1000 true"))
	wantRows(t, conn, sum+log, fmt.Sprint(windows, " 1000 true"))
	if st := ts.Stats(); st.Committed != windows || st.Commits != 2 {
		t.Fatalf("tx stats %+v, want %d rows in 2 commits (one per subtask)", st, windows)
	}
	us, _ = runs()
	wantRows(t, conn, sum+up, fmt.Sprint(windows, " 1000 true"))
	wantRows(t, conn, sum+log, fmt.Sprint(2*windows, " 2000 true"))
	if st := us.Stats(); st != (postgres.UpsertStats{Skipped: windows}) {
		t.Fatalf("upsert stats of the second run %+v, want all %d skipped", st, windows)
	}
}
