package postgres_test

import (
	"context"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
)

// rec is a test record: key, value, position.
type rec struct {
	K   string
	V   int64
	Pos int64
}

func recRow(r rec) ([]any, int64) { return []any{r.K, r.V}, r.Pos }

// flushingWriter is what the upsert sink's writer is.
type flushingWriter interface {
	weir.SinkWriter[rec]
	weir.FlushingWriter
}

func openUpsert(t *testing.T, s *postgres.UpsertSink[rec]) flushingWriter {
	t.Helper()
	w, err := s.OpenWriter(context.Background(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	return w.(flushingWriter)
}

func write(t *testing.T, w flushingWriter, recs ...rec) {
	t.Helper()
	ctx := context.Background()
	if err := w.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx, 1); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// A row written again with a position the table already holds is
// skipped, whatever its values; an older one too; a newer one is applied;
// in one flush the highest position of a key wins, in any order.
func TestUpsertSkipsReplays(t *testing.T) {
	conn := connect(t)
	tbl := table(t, conn, "(k text PRIMARY KEY, v bigint, weir_position bigint NOT NULL)")
	s := postgres.Upsert(dsn(t), postgres.Table{Name: tbl, Key: []string{"k"}, Columns: []string{"v"}}, recRow)
	w := openUpsert(t, s)
	q := "SELECT k, v, weir_position FROM " + tbl + " ORDER BY k"

	write(t, w, rec{"a", 1, 10}, rec{"b", 2, 10})
	wantRows(t, conn, q, "a 1 10", "b 2 10")
	if st := s.Stats(); st != (postgres.UpsertStats{Applied: 2}) {
		t.Fatalf("stats %+v", st)
	}
	// The replay carries other values: a rewrite would show them.
	write(t, w, rec{"a", 100, 10}, rec{"b", 200, 9})
	wantRows(t, conn, q, "a 1 10", "b 2 10")
	if st := s.Stats(); st != (postgres.UpsertStats{Applied: 2, Skipped: 2}) {
		t.Fatalf("stats after the replay %+v, want 2 skipped", st)
	}
	write(t, w, rec{"a", 3, 11}, rec{"c", 4, 1}, rec{"b", 5, 13}, rec{"b", 6, 12}, rec{"c", 7, 2})
	wantRows(t, conn, q, "a 3 11", "b 5 13", "c 7 2")
	if st := s.Stats(); st != (postgres.UpsertStats{Applied: 5, Skipped: 4}) {
		t.Fatalf("stats %+v", st)
	}
}

// A composite key, a schema-qualified table, another position column, and
// FlushRows: rows reach the table without waiting for a checkpoint.
func TestUpsertFlushRowsCompositeKey(t *testing.T) {
	conn := connect(t)
	sqlExec(t, conn, "CREATE SCHEMA IF NOT EXISTS s1")
	sqlExec(t, conn, "CREATE TABLE s1.\"Pairs\" (a text, b int, v bigint, pos numeric, extra text DEFAULT 'x', PRIMARY KEY (b, a))")
	s := postgres.Upsert(dsn(t), postgres.Table{Name: "s1.Pairs", Key: []string{"a", "b"}, Columns: []string{"v"}},
		func(r rec) ([]any, int64) { return []any{r.K, int32(r.Pos % 2), r.V}, r.Pos }, postgres.PositionColumn("pos"), postgres.FlushRows(2))
	w := openUpsert(t, s)
	if err := w.Write(context.Background(), []rec{{"x", 1, 1}, {"x", 2, 2}, {"x", 3, 3}}); err != nil {
		t.Fatal(err)
	}
	q := `SELECT a, b, v, pos::text, extra FROM s1."Pairs" ORDER BY a, b`
	wantRows(t, conn, q, "x 0 2 2 x", "x 1 1 1 x")
	write(t, w)
	wantRows(t, conn, q, "x 0 2 2 x", "x 1 3 3 x")
}

// Tables that do not fit fail OpenWriter with an error naming the table
// and what is wrong.
func TestUpsertMismatch(t *testing.T) {
	conn := connect(t)
	ctx := context.Background()
	open := func(tb postgres.Table, opts ...postgres.Option) error {
		w, err := postgres.Upsert(dsn(t), tb, recRow, opts...).OpenWriter(ctx, 0, 1)
		if err == nil {
			w.Close(ctx)
		}
		return err
	}
	wantErr(t, open(postgres.Table{Name: "no_such_table", Key: []string{"k"}, Columns: []string{"v"}}), "table no_such_table does not exist")
	noKey := table(t, conn, "(k text, v bigint, weir_position bigint)")
	wantErr(t, open(postgres.Table{Name: noKey, Key: []string{"k"}, Columns: []string{"v"}}), noKey, "no primary key or unique index", "(k)")
	ok := table(t, conn, "(k text PRIMARY KEY, v bigint, weir_position bigint)")
	wantErr(t, open(postgres.Table{Name: ok, Key: []string{"k"}, Columns: []string{"value"}}), ok, `no column "value"`)
	wantErr(t, open(postgres.Table{Name: ok, Key: []string{"k"}, Columns: []string{"v"}}, postgres.PositionColumn("pos")), ok, `no column "pos"`)
	textPos := table(t, conn, "(k text PRIMARY KEY, v bigint, weir_position text)")
	wantErr(t, open(postgres.Table{Name: textPos, Key: []string{"k"}, Columns: []string{"v"}}), textPos, `position column "weir_position"`, "is text")
	wantErr(t, open(postgres.Table{Name: ok, Columns: []string{"v"}}), "no Key columns")
	wantErr(t, open(postgres.Table{Name: ok, Key: []string{"k"}, Columns: []string{"k"}}), `"k" is named twice`)
	wantErr(t, open(postgres.Table{Name: "a.b.c", Key: []string{"k"}}), `table name "a.b.c"`)

	// A row function that returns the wrong number of values.
	w, err := postgres.Upsert(dsn(t), postgres.Table{Name: ok, Key: []string{"k"}, Columns: []string{"v"}},
		func(r rec) ([]any, int64) { return []any{r.K}, r.Pos }).OpenWriter(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	wantErr(t, w.Write(ctx, []rec{{"a", 1, 1}}), ok, "returned 1 values, want 2")
}

// A lost connection fails the flush with an error naming the table; the
// writer stays failed (the job restarts it).
func TestUpsertConnectionLoss(t *testing.T) {
	conn := connect(t)
	tbl := table(t, conn, "(k text PRIMARY KEY, v bigint, weir_position bigint NOT NULL)")
	s := postgres.Upsert(dsn(t), postgres.Table{Name: tbl, Key: []string{"k"}, Columns: []string{"v"}}, recRow, postgres.Name("lossy"))
	w := openUpsert(t, s)
	write(t, w, rec{"a", 1, 1})
	if n := sqlExec(t, conn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'weir lossy 0'"); n != 1 {
		t.Fatalf("terminated %d sessions, want the writer's 1", n)
	}
	ctx := context.Background()
	if err := w.Write(ctx, []rec{{"a", 2, 2}}); err != nil {
		t.Fatal(err) // buffered only
	}
	err := w.Flush(ctx, 2)
	wantErr(t, err, "upsert 1 rows into "+tbl, "sink lossy, subtask 0")
	err2 := w.Flush(ctx, 3)
	if err2 != err {
		t.Fatalf("second Flush: %v, want the sticky %v", err2, err)
	}
	wantRows(t, conn, "SELECT k, v FROM "+tbl, "a 1")
}
