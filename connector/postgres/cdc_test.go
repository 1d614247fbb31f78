package postgres_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
	"github.com/weirstream/weir/internal/testing/pgtest"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

var slots atomic.Int64

// cdcConfig is a CDC configuration for the test server, with a fresh slot.
func cdcConfig(t testing.TB, tables string) postgres.CDCConfig {
	t.Helper()
	c := postgres.CDCConfig{DSN: dsn(t), TableName: tables, SlotName: fmt.Sprintf("weir_test_%d", slots.Add(1))}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// The job's connections may take a moment to go: retry while
		// the slot is active.
		weirtest.Poll(20*time.Second, func() bool { return postgres.DropCDC(ctx, c) == nil })
	})
	return c
}

// changeLine prints a change of a Row: kind, table, values, flags.
func changeLine(c weir.Change[postgres.Row]) string {
	r := c.Value
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", c.Kind, r.Table[strings.IndexByte(r.Table, '.')+1:])
	for i, v := range r.Values {
		fmt.Fprintf(&b, " %s=%v", r.Columns[i], v)
	}
	if r.KeyOnly {
		b.WriteString(" (key only)")
	}
	if r.Truncate {
		b.WriteString(" (truncate)")
	}
	return b.String()
}

// runCDC runs a job reading src into a collector until stop returns true
// for what it collected, then cancels it.
func runCDC(t *testing.T, src weir.Source[weir.Change[postgres.Row]], until func([]string) bool, opts ...weir.JobOption) []string {
	t.Helper()
	job := weir.NewJob("cdc", opts...)
	col := weir.Collect(weir.FromSource(job, "cdc", src, weir.NoWatermarks[weir.Change[postgres.Row]]()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	lines := func() []string {
		var out []string
		for _, c := range col.Items() {
			out = append(out, changeLine(c))
		}
		return out
	}
	ok := weirtest.Poll(time.Minute, func() bool {
		select {
		case err := <-done:
			done <- err
			return true
		default:
		}
		return until(lines())
	})
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Fatalf("job: %v", err)
	}
	if !ok {
		t.Fatalf("timed out; got:\n%s", strings.Join(lines(), "\n"))
	}
	return lines()
}

func want(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The snapshot holds the rows committed before the slot; then inserts,
// updates (with the before-image under REPLICA IDENTITY FULL, the old key
// when the key changes under the default, nothing before otherwise),
// deletes and truncates arrive in commit order; an aborted transaction
// does not; a table outside table-name does not.
func TestCDCSnapshotThenChanges(t *testing.T) {
	conn := connect(t)
	full := table(t, conn, "(id int PRIMARY KEY, v text)")
	def := table(t, conn, "(id int PRIMARY KEY, v text)")
	other := table(t, conn, "(id int PRIMARY KEY)")
	sqlExec(t, conn, "ALTER TABLE "+full+" REPLICA IDENTITY FULL")
	sqlExec(t, conn, "INSERT INTO "+full+" VALUES (1, 'a'), (2, 'b')")
	sqlExec(t, conn, "INSERT INTO "+def+" VALUES (1, 'x')")
	cfg := cdcConfig(t, full+"|"+def)
	started := false
	got := runCDC(t, postgres.CDCRows(cfg), func(l []string) bool {
		if len(l) >= 3 && !started {
			started = true
			ctx := context.Background()
			tx, _ := conn.Begin(ctx)
			tx.Exec(ctx, "INSERT INTO "+full+" VALUES (99, 'aborted')")
			tx.Rollback(ctx)
			for _, q := range []string{
				"INSERT INTO " + full + " VALUES (3, 'c')",
				"UPDATE " + full + " SET v = 'bb' WHERE id = 2",
				"UPDATE " + def + " SET v = 'y' WHERE id = 1",
				"UPDATE " + def + " SET id = 5 WHERE id = 1",
				"INSERT INTO " + other + " VALUES (1)",
				"DELETE FROM " + full + " WHERE id = 1",
				"DELETE FROM " + def + " WHERE id = 5",
				"TRUNCATE " + full,
			} {
				sqlExec(t, conn, q)
			}
		}
		return len(l) >= 12
	})
	f, d := full, def
	want(t, got,
		"+I "+f+" id=1 v=a",
		"+I "+f+" id=2 v=b",
		"+I "+d+" id=1 v=x",
		"+I "+f+" id=3 v=c",
		"-U "+f+" id=2 v=b",
		"+U "+f+" id=2 v=bb",
		"+U "+d+" id=1 v=y",
		"-U "+d+" id=1 v=<nil> (key only)",
		"+U "+d+" id=5 v=y",
		"-D "+f+" id=1 v=a",
		"-D "+d+" id=5 v=<nil> (key only)",
		"-D "+f+" (truncate)",
	)
}

// The clear errors: a role without REPLICATION, a missing publication
// that may not be created or lacks a table, a slot that exists for a new
// job, a restore whose slot was dropped or whose checkpoint fell in the
// snapshot, no matching table, and bad options (TestCDCWalLevel: the
// server's wal_level).
func TestCDCErrors(t *testing.T) {
	conn := connect(t)
	ctx := context.Background()
	tbl := table(t, conn, "(id int PRIMARY KEY)")
	open := func(cfg postgres.CDCConfig) error {
		src := postgres.CDCRows(cfg)
		splits, err := src.Splits(ctx)
		if err != nil {
			return err
		}
		r, err := src.Open(ctx, splits[0])
		if err == nil {
			r.Close()
		}
		return err
	}

	// No REPLICATION attribute.
	sqlExec(t, conn, "DROP ROLE IF EXISTS weir_norepl")
	sqlExec(t, conn, "CREATE ROLE weir_norepl LOGIN")
	sqlExec(t, conn, "GRANT SELECT ON "+tbl+" TO weir_norepl")
	cfg := cdcConfig(t, tbl)
	cfg.DSN += " user=weir_norepl"
	wantErr(t, open(cfg), "role weir_norepl lacks the REPLICATION attribute", "ALTER ROLE")

	// A missing publication that may not be created.
	cfg = cdcConfig(t, tbl)
	cfg.PublicationAutoCreate = "disabled"
	wantErr(t, open(cfg), "publication "+cfg.SlotName+" does not exist", "CREATE PUBLICATION")

	// A publication that lacks the table.
	cfg = cdcConfig(t, tbl)
	sqlExec(t, conn, "CREATE PUBLICATION "+cfg.SlotName)
	wantErr(t, open(cfg), "does not publish", "ALTER PUBLICATION")

	// A slot that another reader streams from; one that exists but is
	// idle is the job's, taken again with a new snapshot.
	cfg = cdcConfig(t, tbl)
	sqlExec(t, conn, "INSERT INTO "+tbl+" VALUES (1)")
	if err := open(cfg); err != nil {
		t.Fatal(err)
	}
	busy := postgres.CDCRows(cfg)
	splits, _ := busy.Splits(ctx)
	br, err := busy.Open(ctx, splits[0])
	if err != nil {
		t.Fatalf("a new job on an idle slot: %v", err)
	}
	defer br.Close()
	brows := make([]weir.Change[postgres.Row], 8)
	weirtest.Poll(time.Minute, func() bool { // through the snapshot, into streaming
		n, err := br.Read(ctx, brows)
		if err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	held := cfg
	held.SlotMaxRetries = -1 // no waiting for it
	wantErr(t, open(held), "replication slot "+cfg.SlotName+" is in use by another connection")
	held.SlotMaxRetries, held.SlotRetryDelay = 3, 10*time.Millisecond
	wantErr(t, open(held), "replication slot "+cfg.SlotName+" is in use by another connection", "still after 30ms")

	// A restore whose slot is gone.
	br.Close()
	src := postgres.CDCRows(cfg)
	weirtest.WaitFor(t, "the slot dropped", time.Minute, func() bool { return postgres.DropCDC(ctx, cfg) == nil })
	splits, _ = src.Splits(ctx)
	_, err = src.OpenAt(ctx, splits[0], []byte(`{"slot":"`+cfg.SlotName+`","phase":"stream","lsn":1000}`))
	wantErr(t, err, "replication slot "+cfg.SlotName+" does not exist")
	_, err = src.OpenAt(ctx, splits[0], []byte(`{"slot":"`+cfg.SlotName+`","phase":"snapshot","table":0,"rows":5}`))
	wantErr(t, err, "during the initial snapshot")

	// No table matches.
	cfg = cdcConfig(t, "no_such_table")
	wantErr(t, open(cfg), "no table matches")

	// Options, by Flink CDC's names.
	_, err = postgres.FromOptions(map[string]string{"connector": "postgres-cdc", "hostname": "h", "database-name": "d", "table-name": "t", "slot.name": "s", "decoding.plugin.name": "decoderbufs"})
	wantErr(t, err, "'decoding.plugin.name' = 'decoderbufs'", "pgoutput")
	_, err = postgres.FromOptions(map[string]string{"hostname": "h", "database-name": "d", "table-name": "t"})
	wantErr(t, err, "'slot.name' is missing")
	_, err = postgres.FromOptions(map[string]string{"hostname": "h", "database-name": "d", "table-name": "t", "slot.name": "s", "port": "x"})
	wantErr(t, err, "'port' = 'x'")
	_, err = postgres.FromOptions(map[string]string{"hostname": "h", "database-name": "d", "table-name": "t", "slot.name": "s", "bogus": "1"})
	wantErr(t, err, "unknown option 'bogus'")
	c, err := postgres.FromOptions(map[string]string{"connector": "postgres-cdc", "hostname": "db", "port": "5433", "username": "u", "password": "secret",
		"database-name": "shop", "schema-name": "public", "table-name": "accounts", "slot.name": "flink", "decoding.plugin.name": "pgoutput"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Hostname != "db" || c.Port != 5433 || c.Username != "u" || c.Password != "secret" || c.DatabaseName != "shop" || c.SchemaName != "public" || c.TableName != "accounts" || c.SlotName != "flink" {
		t.Fatalf("FromOptions: %+v", c)
	}
	if strings.Contains(c.String(), "secret") {
		t.Fatalf("String shows the password: %s", c)
	}
	base := map[string]string{"hostname": "h", "database-name": "d", "table-name": "t", "slot.name": "s"}
	with := func(k, v string) map[string]string {
		m := maps.Clone(base)
		m[k] = v
		return m
	}
	c, err = postgres.FromOptions(with("debezium.slot.retry.delay.ms", "250"))
	if err != nil || c.SlotRetryDelay != 250*time.Millisecond || c.SlotMaxRetries != 0 {
		t.Fatalf("'debezium.slot.retry.delay.ms' = '250': %+v, %v", c, err)
	}
	if c, err = postgres.FromOptions(with("debezium.slot.max.retries", "0")); err != nil || c.SlotMaxRetries >= 0 {
		t.Fatalf("'debezium.slot.max.retries' = '0' (no waiting): %+v, %v", c, err)
	}
	_, err = postgres.FromOptions(with("debezium.slot.max.retries", "many"))
	wantErr(t, err, "'debezium.slot.max.retries' = 'many'")
	_, err = postgres.FromOptions(with("debezium.slot.retry.delay.ms", "-5"))
	wantErr(t, err, "'debezium.slot.retry.delay.ms' = '-5'")
}

// A server whose wal_level is not logical is refused with the fix.
func TestCDCWalLevel(t *testing.T) {
	dsn(t) // skips without PostgreSQL
	s, err := pgtest.Start(context.Background(), 2*time.Minute, "wal_level=replica")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	cfg := postgres.CDCConfig{DSN: s.DSN, TableName: "t", SlotName: "weir_wal"}
	src := postgres.CDCRows(cfg)
	splits, _ := src.Splits(context.Background())
	_, err = src.Open(context.Background(), splits[0])
	wantErr(t, err, "wal_level is replica", "wal_level = logical")
}
