package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

type cdcReader interface {
	weir.CheckpointedReader[weir.Change[postgres.Row]]
	weir.CheckpointListener
}

// readN reads from r in reads of at most batch records until it has n
// more records.
func readN(t *testing.T, r cdcReader, batch, n int) []string {
	t.Helper()
	var out []string
	dst := make([]weir.Change[postgres.Row], batch)
	if !weirtest.Poll(time.Minute, func() bool {
		k, err := r.Read(context.Background(), dst[:min(batch, n-len(out))])
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range dst[:k] {
			out = append(out, fmt.Sprintf("%s %v", c.Kind, c.Value.Get("id")))
		}
		return len(out) == n
	}) {
		t.Fatalf("read %d of %d records", len(out), n)
	}
	return out
}

// A reader closed in the middle of a transaction and reopened at its
// Position goes on with the next record of that transaction: nothing lost,
// nothing doubled. Reading does not acknowledge the slot; a completed
// checkpoint does, and a restore from a position older than the slot's
// acknowledgement is refused.
func TestCDCResumesInsideATransaction(t *testing.T) {
	conn := connect(t)
	ctx := context.Background()
	tbl := table(t, conn, "(id int PRIMARY KEY)")
	cfg := cdcConfig(t, tbl)
	src := postgres.CDCRows(cfg)
	splits, _ := src.Splits(ctx)
	open := func(pos []byte) cdcReader {
		t.Helper()
		var r weir.SplitReader[weir.Change[postgres.Row]]
		var err error
		if pos == nil {
			r, err = src.Open(ctx, splits[0])
		} else {
			r, err = src.OpenAt(ctx, splits[0], pos)
		}
		if err != nil {
			t.Fatal(err)
		}
		return r.(cdcReader)
	}
	r := open(nil)
	sqlExec(t, conn, "INSERT INTO "+tbl+" SELECT g FROM generate_series(1, 50) g")
	sqlExec(t, conn, "INSERT INTO "+tbl+" SELECT g FROM generate_series(51, 60) g")
	got := readN(t, r, 7, 21) // 3 reads, inside the first transaction
	pos, err := r.Position()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	r = open(pos)
	got = append(got, readN(t, r, 7, 39)...)
	for i, g := range got {
		if want := fmt.Sprintf("+I %d", i+1); g != want {
			t.Fatalf("record %d is %q, want %q (position %s)", i, g, want, pos)
		}
	}
	var p struct{ LSN uint64 }
	end, _ := r.Position()
	json.Unmarshal(end, &p)
	slotLSN := func() uint64 {
		var lsn string
		if err := conn.QueryRow(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", cfg.SlotName).Scan(&lsn); err != nil {
			t.Fatal(err)
		}
		var hi, lo uint32
		fmt.Sscanf(lsn, "%X/%X", &hi, &lo)
		return uint64(hi)<<32 | uint64(lo)
	}
	if a := slotLSN(); a >= p.LSN {
		t.Fatalf("the slot is acknowledged up to %X before any checkpoint completed (position %X)", a, p.LSN)
	}
	if err := r.NotifyCheckpointComplete(ctx, 1, end); err != nil {
		t.Fatal(err)
	}
	weirtest.WaitFor(t, "the slot acknowledged", time.Minute, func() bool { return slotLSN() >= p.LSN })
	r.Close()
	// the server ends the closed reader's replication session on its own
	// time (a busy machine: after the next open tried the slot)
	weirtest.WaitFor(t, "the slot released", time.Minute, func() bool {
		var active bool
		if err := conn.QueryRow(ctx, "SELECT active FROM pg_replication_slots WHERE slot_name = $1", cfg.SlotName).Scan(&active); err != nil {
			t.Fatal(err)
		}
		return !active
	})
	_, err = src.OpenAt(ctx, splits[0], pos)
	wantErr(t, err, "beyond the checkpoint's position")
}

// A reader reopened while the session of the one it replaces still holds
// the slot (a job restarting after a failure) waits for the slot, as
// Debezium does ('debezium.slot.max.retries' times
// 'debezium.slot.retry.delay.ms'), and goes on where the checkpoint left.
func TestCDCWaitsForAHeldSlot(t *testing.T) {
	conn := connect(t)
	ctx := context.Background()
	tbl := table(t, conn, "(id int PRIMARY KEY)")
	cfg := cdcConfig(t, tbl)
	cfg.SlotMaxRetries, cfg.SlotRetryDelay = 1200, 50*time.Millisecond // up to a minute
	src := postgres.CDCRows(cfg)
	splits, _ := src.Splits(ctx)
	r1, err := src.Open(ctx, splits[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	sqlExec(t, conn, "INSERT INTO "+tbl+" SELECT g FROM generate_series(1, 10) g")
	first := readN(t, r1.(cdcReader), 4, 5)
	pos, err := r1.(cdcReader).Position()
	if err != nil {
		t.Fatal(err)
	}
	// the backends of r1, before r2 starts
	app := "weir cdc " + cfg.SlotName
	before := map[string]bool{}
	for _, pid := range rows(t, conn, "SELECT pid::text FROM pg_stat_activity WHERE application_name = $1", app) {
		before[pid] = true
	}
	type opened struct {
		r   weir.SplitReader[weir.Change[postgres.Row]]
		err error
	}
	done := make(chan opened, 1)
	go func() {
		r, err := src.OpenAt(ctx, splits[0], pos)
		done <- opened{r, err}
	}()
	// r2 has looked at the slot while r1 holds it, and again: its backend
	// started the slot's query three times (pg_stat_activity shows the
	// last query and when it started; the first is pgx preparing it, the
	// second its first run, which found the slot held)
	starts := map[string]bool{}
	weirtest.WaitFor(t, "the second reader looking at the held slot twice", time.Minute, func() bool {
		select {
		case o := <-done:
			t.Fatalf("the second reader did not wait for the slot r1 holds: %v", o.err)
		default:
		}
		for _, r := range rows(t, conn, "SELECT pid::text, query_start::text FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'SELECT confirmed_flush_lsn%'", app) {
			if pid, start, _ := strings.Cut(r, " "); !before[pid] {
				starts[start] = true
			}
		}
		return len(starts) >= 3
	})
	r1.Close()
	var o opened
	select {
	case o = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the second reader did not open within two minutes of the slot's release")
	}
	if o.err != nil {
		t.Fatalf("the second reader, after the first one closed: %v", o.err)
	}
	defer o.r.Close()
	got := append(first, readN(t, o.r.(cdcReader), 4, 5)...)
	for i, g := range got {
		if want := fmt.Sprintf("+I %d", i+1); g != want {
			t.Fatalf("record %d is %q, want %q", i, g, want)
		}
	}
}
