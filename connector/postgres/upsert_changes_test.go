package postgres_test

import (
	"context"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
)

type changeWriter interface {
	weir.SinkWriter[weir.Change[rec]]
	weir.FlushingWriter
}

func ch(k weir.ChangeKind, r rec) weir.Change[rec] { return weir.Change[rec]{Kind: k, Value: r} }

// UpsertChanges: Insert and UpdateAfter upsert, Delete deletes, an
// UpdateBefore followed by an UpdateAfter of its key is one update, one
// without deletes at the checkpoint; replays of retractions of rows that
// a later change replaced do nothing.
func TestUpsertChangesDeletesOnRetraction(t *testing.T) {
	conn := connect(t)
	tbl := table(t, conn, "(k text PRIMARY KEY, v bigint, weir_position bigint NOT NULL)")
	s := postgres.UpsertChanges(dsn(t), postgres.Table{Name: tbl, Key: []string{"k"}, Columns: []string{"v"}}, recRow, postgres.FlushRows(3))
	sw, err := s.OpenWriter(context.Background(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close(context.Background())
	w := sw.(changeWriter)
	ctx := context.Background()
	put := func(flush bool, cs ...weir.Change[rec]) {
		t.Helper()
		if err := w.Write(ctx, cs); err != nil {
			t.Fatal(err)
		}
		if flush {
			if err := w.Flush(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	q := "SELECT k, v, weir_position FROM " + tbl + " ORDER BY k"

	put(true, ch(weir.Insert, rec{"a", 1, 1}), ch(weir.Insert, rec{"b", 2, 1}), ch(weir.Insert, rec{"c", 3, 1}))
	wantRows(t, conn, q, "a 1 1", "b 2 1", "c 3 1")
	// A delete; an update pair; an UpdateBefore alone.
	put(true, ch(weir.Delete, rec{"a", 1, 1}), ch(weir.UpdateBefore, rec{"b", 2, 1}), ch(weir.UpdateAfter, rec{"b", 20, 2}), ch(weir.UpdateBefore, rec{"c", 3, 1}))
	wantRows(t, conn, q, "b 20 2")
	// A replayed retraction of b's older row does nothing; of its current
	// row deletes it; a replayed insert of a row whose key was deleted
	// comes back (the replay goes on to delete it again).
	put(true, ch(weir.Delete, rec{"b", 2, 1}))
	wantRows(t, conn, q, "b 20 2")
	// FlushRows(3) flushes the full buffer between checkpoints, but holds
	// back the UpdateBefore at its end: its UpdateAfter comes next, and c
	// is never seen deleted.
	put(true, ch(weir.Insert, rec{"c", 3, 3}))
	put(false, ch(weir.Insert, rec{"d", 4, 1}), ch(weir.Insert, rec{"e", 5, 1}), ch(weir.UpdateBefore, rec{"c", 3, 3}))
	wantRows(t, conn, q, "b 20 2", "c 3 3", "d 4 1", "e 5 1")
	put(true, ch(weir.UpdateAfter, rec{"c", 30, 4}), ch(weir.Delete, rec{"b", 20, 2}))
	wantRows(t, conn, q, "c 30 4", "d 4 1", "e 5 1")
	if st := s.Stats(); st.Applied != 11 {
		t.Fatalf("stats %+v, want 11 applied", st)
	}
}
