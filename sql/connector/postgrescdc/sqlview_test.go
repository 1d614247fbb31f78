package postgrescdc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir/internal/app/cdcview"
	"github.com/weirstream/weir/internal/testing/crashtest"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// viewSQL is the #11 job: a 'postgres-cdc' table, a 'jdbc' table with a
// primary key, and the retracting GROUP BY between them.
const viewSQL = `
CREATE TABLE accounts (
  id BIGINT,
  owner STRING,
  balance BIGINT,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'postgres-cdc',
  'hostname' = '%s',
  'port' = '5432',
  'username' = 'weir',
  'database-name' = 'postgres',
  'schema-name' = 'public',
  'table-name' = '%s',
  'slot.name' = '%s',
  'decoding.plugin.name' = 'pgoutput',
  'scan.startup.mode' = '%s'
);

CREATE TABLE owner_totals (
  owner STRING,
  total BIGINT,
  n BIGINT,
  PRIMARY KEY (owner) NOT ENFORCED
) WITH (
  'connector' = 'jdbc',
  'url' = 'jdbc:postgresql://localhost:5432/postgres?sslmode=disable&host=%s',
  'table-name' = '%s',
  'username' = 'weir',
  'sink.buffer-flush.interval' = '100ms'
);

INSERT INTO owner_totals SELECT owner, SUM(balance), COUNT(*) FROM accounts GROUP BY owner;
`

// sqlView sets up the tables and the SQL file of one test.
type sqlView struct {
	c    cdcview.Config
	file string // 'scan.startup.mode' = 'initial': the first run's
	// restarts is the same file with 'latest-offset', which only matters
	// when no checkpoint is restored: a restart that did not restore would
	// then start with empty state from the slot's position, and the view
	// would never equal the SELECT again.
	restarts string
	bin      string
}

func newSQLView(t *testing.T, name string) *sqlView {
	t.Helper()
	if server == nil {
		t.Skip(skipReason)
	}
	c := cdcview.Config{DSN: server.DSN, Slot: fmt.Sprintf("weir_sqlview_%s", name), Source: name + "_accounts", View: name + "_totals", Group: "owner", Value: "balance"}
	exec(t, fmt.Sprintf(`CREATE TABLE %s (id bigint PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL)`, c.Source),
		fmt.Sprintf(`CREATE TABLE %s (owner text PRIMARY KEY, total bigint NOT NULL, n bigint NOT NULL)`, c.View))
	dir := t.TempDir()
	v := &sqlView{c: c, file: filepath.Join(dir, "view.sql"), restarts: filepath.Join(dir, "view-restart.sql"), bin: filepath.Join(dir, "weir")}
	for file, mode := range map[string]string{v.file: "initial", v.restarts: "latest-offset"} {
		if err := os.WriteFile(file, []byte(fmt.Sprintf(viewSQL, server.Dir, c.Source, c.Slot, mode, server.Dir, c.View)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := crashtest.GoBuild(v.bin, "github.com/weirstream/weir/cmd/weir"); err != nil {
		t.Fatalf("build weir: %v", err)
	}
	return v
}

func (v *sqlView) args(file, ck string) []string {
	return []string{"sql", "-f", file, "--parallelism", "2", "--checkpoint-dir", ck, "--checkpoint-interval", "100ms"}
}

// start runs `weir sql -f` in the background; done gets its end.
func (v *sqlView) start(t *testing.T, file, ck string) (*osexec.Cmd, chan error) {
	t.Helper()
	cmd := osexec.Command(v.bin, v.args(file, ck)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		done <- fmt.Errorf("weir sql ended: %v: %s", err, stderr.String())
	}()
	return cmd, done
}

// diff compares owner_totals with the SELECT of the source ("" when equal).
func (v *sqlView) diff(t *testing.T, conn *pgx.Conn) (string, int) {
	t.Helper()
	read := func(q string) map[string]string {
		rows, err := conn.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[string]string{}
		for rows.Next() {
			var g string
			var total, n int64
			if err := rows.Scan(&g, &total, &n); err != nil {
				t.Fatal(err)
			}
			m[g] = fmt.Sprintf("total %d, %d rows", total, n)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		return m
	}
	src := read(fmt.Sprintf("SELECT owner, sum(balance)::bigint, count(*) FROM %s GROUP BY owner", v.c.Source))
	view := read(fmt.Sprintf("SELECT owner, total, n FROM %s", v.c.View))
	var d []string
	for g, s := range src {
		if view[g] != s {
			d = append(d, fmt.Sprintf("%s: SELECT has %s, the view %q", g, s, view[g]))
		}
	}
	for g, s := range view {
		if _, ok := src[g]; !ok {
			d = append(d, fmt.Sprintf("%s: the view has %s, SELECT has no rows", g, s))
		}
	}
	sort.Strings(d)
	return strings.Join(d, "; "), len(src)
}

func (v *sqlView) wait(t *testing.T, done <-chan error) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), server.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var d string
	var groups int
	if !weirtest.Poll(2*time.Minute, func() bool {
		select {
		case err := <-done:
			t.Fatal(err)
		default:
		}
		d, groups = v.diff(t, conn)
		return d == ""
	}) {
		t.Fatalf("owner_totals never equalled the SELECT of the source: %s", d)
	}
	return groups
}

// waitAcked waits until the slot is acknowledged beyond the server's
// current WAL position: a checkpoint taken while streaming has completed
// (so a restart resumes from the stream, not from the snapshot).
func waitAcked(t *testing.T, slot string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), server.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var lsn string
	if err := conn.QueryRow(context.Background(), "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	if !weirtest.Poll(time.Minute, func() bool {
		var ok bool
		err := conn.QueryRow(context.Background(), "SELECT coalesce(confirmed_flush_lsn >= $1::pg_lsn, false) FROM pg_replication_slots WHERE slot_name = $2", lsn, slot).Scan(&ok)
		return err == nil && ok
	}) {
		t.Fatalf("slot %s not acknowledged beyond %s", slot, lsn)
	}
}

// Issue #11's SQL check: `weir sql -f` keeps owner_totals (a 'jdbc' table)
// equal to SELECT owner, sum(balance), count(*) of accounts (a
// 'postgres-cdc' table under the default REPLICA IDENTITY) while
// concurrent writers insert, update, move rows between owners, delete,
// transfer and roll back; an owner whose rows are all deleted disappears.
// Then the job is killed with SIGKILL mid-stream, repeatedly, and
// restarted on its checkpoint directory, and the view again equals the
// SELECT once the writers stop (the restarts must restore the checkpoint:
// see sqlView.restarts).
func TestSQLViewEqualsSelect(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs weir")
	}
	v := newSQLView(t, "sqlview")
	ctx := context.Background()
	var st cdcview.Stats
	seed := crashtest.Seed(t)
	// Rows before the job: its snapshot.
	if err := cdcview.Writers(ctx, v.c.DSN, v.c, 2, 50, seed, &st); err != nil {
		t.Fatal(err)
	}
	ck := t.TempDir()
	cmd, done := v.start(t, v.file, ck)
	defer func() { cmd.Process.Kill() }()
	if err := cdcview.Writers(ctx, v.c.DSN, v.c, 4, 300, seed+1, &st); err != nil {
		t.Fatal(err)
	}
	groups := v.wait(t, done)
	if groups < 4 {
		t.Fatalf("only %d owners", groups)
	}
	// Every row of one owner goes: its group leaves the view.
	conn, err := pgx.Connect(ctx, server.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var gone string
	if err := conn.QueryRow(ctx, "SELECT owner FROM "+v.c.Source+" GROUP BY owner ORDER BY count(*) LIMIT 1").Scan(&gone); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "DELETE FROM "+v.c.Source+" WHERE owner = $1", gone); err != nil {
		t.Fatal(err)
	}
	v.wait(t, done)
	var left int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+v.c.View+" WHERE owner = $1", gone).Scan(&left); err != nil || left != 0 {
		t.Fatalf("owner %s still in the view (%d rows, %v)", gone, left, err)
	}
	waitAcked(t, v.c.Slot)
	t.Logf("uninterrupted: %s; %d owners", &st, groups)
	cmd.Process.Kill()
	<-done

	// Kills mid-stream while writers write; each restart resumes from the
	// checkpoint directory.
	rng := rand.New(rand.NewPCG(seed, 11))
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	werr := make(chan error, 1)
	go func() { werr <- cdcview.Writers(wctx, v.c.DSN, v.c, 3, 0, seed+2, &st) }()
	kills := 0
	for n := crashtest.Kills(5); kills < n; {
		window := time.Duration(300+rng.IntN(700)) * time.Millisecond
		killed, _, stderr, err := crashtest.Attempt(osexec.Command(v.bin, v.args(v.restarts, ck)...), window)
		if !killed {
			t.Fatalf("weir sql ended by itself after %d kills: %v\n%s", kills, err, stderr)
		}
		kills++
	}
	stop()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	cmd, done = v.start(t, v.restarts, ck)
	groups = v.wait(t, done)
	t.Logf("%d kills; writers: %s; owner_totals of %d owners equals the SELECT", kills, &st, groups)
}
