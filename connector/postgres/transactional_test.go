package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
)

func kv(r rec) []any { return []any{r.K, r.V} }

func openTx(t *testing.T, s *postgres.TxSink[rec], subtask, parallelism int) weir.CommittingWriter[rec] {
	t.Helper()
	w, err := s.OpenWriter(context.Background(), subtask, parallelism)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	return w.(weir.CommittingWriter[rec])
}

func preCommit(t *testing.T, w weir.CommittingWriter[rec], id int64, recs ...rec) []byte {
	t.Helper()
	ctx := context.Background()
	if err := w.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	c, err := w.PreCommit(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Rows become visible at Commit, with a bookkeeping row, in one
// transaction; committing again changes nothing; what a crashed writer
// staged but never pre-committed is deleted by the next writer's Recover;
// a committable whose rows are gone is an error, not a silent loss.
func TestTransactionalCommitOnce(t *testing.T) {
	conn := connect(t)
	ctx := context.Background()
	tbl := table(t, conn, "(k text NOT NULL, v bigint NOT NULL)")
	bk := "bk_" + tbl
	s := postgres.Transactional(dsn(t), postgres.Table{Name: tbl, Columns: []string{"k", "v"}}, kv, postgres.BookkeepingTable(bk), postgres.FlushRows(1))
	q := "SELECT k, v FROM " + tbl + " ORDER BY k, v"
	staged := "SELECT count(*) FROM " + tbl + "_weir_staging"

	w1 := openTx(t, s, 0, 1)
	if err := w1.Recover(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if c := preCommit(t, w1, 1); c != nil {
		t.Fatalf("committable %s with nothing written", c)
	}
	c1 := preCommit(t, w1, 1, rec{K: "a", V: 1}, rec{K: "b", V: 2}, rec{K: "a", V: 1})
	wantRows(t, conn, q) // staged, not visible
	wantRows(t, conn, staged, "3")
	cm := s.Committer()
	if err := cm.Commit(ctx, c1); err != nil {
		t.Fatal(err)
	}
	wantRows(t, conn, q, "a 1", "a 1", "b 2")
	wantRows(t, conn, staged, "0")
	wantRows(t, conn, "SELECT sink, subtask, checkpoint, first_seq, rows FROM "+bk, tbl+" 0 1 0 3")
	if err := cm.Commit(ctx, c1); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	wantRows(t, conn, q, "a 1", "a 1", "b 2")
	if st := s.Stats(); st != (postgres.TxStats{Written: 3, Staged: 3, Committed: 3, Commits: 1, SkippedCommits: 1}) {
		t.Fatalf("stats %+v", st)
	}

	// Checkpoint 2 is pre-committed (and, as after a restore, committed);
	// then the writer stages a row and crashes.
	c2 := preCommit(t, w1, 2, rec{K: "c", V: 3})
	if err := w1.Write(ctx, []rec{{K: "lost", V: 9}}); err != nil {
		t.Fatal(err)
	}
	wantRows(t, conn, staged, "2")
	w1.Close(ctx)
	if err := cm.Commit(ctx, c2); err != nil {
		t.Fatal(err)
	}
	w2 := openTx(t, s, 0, 1)
	if err := w2.Recover(ctx, 2); err != nil {
		t.Fatal(err)
	}
	wantRows(t, conn, staged, "0")
	if err := cm.Commit(ctx, c2); err != nil {
		t.Fatal(err)
	}
	wantRows(t, conn, q, "a 1", "a 1", "b 2", "c 3")

	// A committable whose staged rows were deleted (by a Recover run out
	// of order) cannot be committed.
	c3 := preCommit(t, w2, 3, rec{K: "d", V: 4})
	w3 := openTx(t, s, 0, 1)
	if err := w3.Recover(ctx, 2); err != nil {
		t.Fatal(err)
	}
	wantErr(t, cm.Commit(ctx, c3), "checkpoint 3 of sink "+tbl+", subtask 0", "0 of its 1 rows", "output is lost")
	wantRows(t, conn, q, "a 1", "a 1", "b 2", "c 3")
	wantRows(t, conn, "SELECT count(*) FROM "+bk, "2")

	var body map[string]any
	if err := json.Unmarshal(c3, &body); err != nil || len(c3) > 200 {
		t.Fatalf("committable %s (%d bytes): %v", c3, len(c3), err)
	}
	wantErr(t, cm.Commit(ctx, []byte("{}")), "malformed committable")
}

// Recover of subtask 0 after a rescale from 3 to 2 also deletes what
// subtask 2 left; subtask 1 only its own; nobody the rows of the current
// writers.
func TestTransactionalRecoverRescaled(t *testing.T) {
	conn := connect(t)
	ctx := context.Background()
	tbl := table(t, conn, "(k text NOT NULL, v bigint NOT NULL)")
	s := postgres.Transactional(dsn(t), postgres.Table{Name: tbl, Columns: []string{"k", "v"}}, kv, postgres.FlushRows(1))
	staged := "SELECT weir_subtask, k FROM " + tbl + "_weir_staging ORDER BY k"
	for i := range 3 {
		w := openTx(t, s, i, 3)
		if err := w.Write(ctx, []rec{{K: "old" + string(rune('0'+i))}}); err != nil {
			t.Fatal(err)
		}
	}
	n0, n1 := openTx(t, s, 0, 2), openTx(t, s, 1, 2)
	for _, w := range []weir.CommittingWriter[rec]{n0, n1} {
		if err := w.Write(ctx, []rec{{K: "new"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := n1.Recover(ctx, 7); err != nil {
		t.Fatal(err)
	}
	wantRows(t, conn, staged, "0 new", "1 new", "0 old0", "2 old2")
	if err := n0.Recover(ctx, 7); err != nil {
		t.Fatal(err)
	}
	wantRows(t, conn, staged, "0 new", "1 new")
}

// With a Key, a commit replaces rows, and the last row of a key written in
// a checkpoint wins.
func TestTransactionalKeyed(t *testing.T) {
	conn := connect(t)
	ctx := context.Background()
	tbl := table(t, conn, "(k text PRIMARY KEY, v bigint NOT NULL)")
	s := postgres.Transactional(dsn(t), postgres.Table{Name: tbl, Key: []string{"k"}, Columns: []string{"v"}}, kv, postgres.FlushRows(2))
	w := openTx(t, s, 0, 1)
	cm := s.Committer()
	q := "SELECT k, v FROM " + tbl + " ORDER BY k"
	if err := cm.Commit(ctx, preCommit(t, w, 1, rec{K: "a", V: 1}, rec{K: "b", V: 1}, rec{K: "a", V: 3}, rec{K: "a", V: 2})); err != nil {
		t.Fatal(err)
	}
	wantRows(t, conn, q, "a 2", "b 1")
	if err := cm.Commit(ctx, preCommit(t, w, 2, rec{K: "b", V: 5})); err != nil {
		t.Fatal(err)
	}
	wantRows(t, conn, q, "a 2", "b 5")
}

func TestTransactionalMismatch(t *testing.T) {
	conn := connect(t)
	ctx := context.Background()
	open := func(tb postgres.Table, opts ...postgres.Option) error {
		w, err := postgres.Transactional(dsn(t), tb, kv, opts...).OpenWriter(ctx, 0, 1)
		if err == nil {
			w.Close(ctx)
		}
		return err
	}
	wantErr(t, open(postgres.Table{Name: "missing_table", Columns: []string{"k", "v"}}), "table missing_table does not exist")
	tbl := table(t, conn, "(k text, v bigint)")
	wantErr(t, open(postgres.Table{Name: tbl, Columns: []string{"k", "value"}}), tbl, `no column "value"`)
	wantErr(t, open(postgres.Table{Name: tbl, Key: []string{"k"}, Columns: []string{"v"}}), tbl, "no primary key or unique index")
	// A staging table that does not match, and a bookkeeping table that is
	// something else.
	sqlExec(t, conn, "CREATE TABLE "+tbl+"_other (k text, v text, weir_sink text, weir_subtask int, weir_writer text, weir_seq bigint)")
	wantErr(t, open(postgres.Table{Name: tbl, Columns: []string{"k", "v"}}, postgres.StagingTable(tbl+"_other")), `column "v" is text in staging table `+tbl+"_other but bigint in table "+tbl)
	sqlExec(t, conn, "CREATE TABLE "+tbl+"_bk (sink text, subtask int)")
	wantErr(t, open(postgres.Table{Name: tbl, Columns: []string{"k", "v"}}, postgres.BookkeepingTable(tbl+"_bk")), "table "+tbl+"_bk has no column", "not a bookkeeping table")
	weirCol := table(t, conn, "(weir_seq bigint)")
	wantErr(t, open(postgres.Table{Name: weirCol, Columns: []string{"weir_seq"}}), `column "weir_seq" clashes`)
	wantErr(t, open(postgres.Table{Name: tbl, Columns: []string{"k", "v"}}, postgres.FlushRows(0)), "FlushRows(0)")
}
