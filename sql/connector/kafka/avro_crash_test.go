package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/testing/crashtest"
	"github.com/weirstream/weir/internal/testing/pgtest"
	"github.com/weirstream/weir/internal/testing/schemaregistry"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// accountsEnvelope is the Debezium envelope (as Debezium's AvroConverter
// registers it) of a table accounts(id, owner, balance).
const accountsEnvelope = `{
  "type": "record", "name": "Envelope", "namespace": "dbserver1.public.accounts",
  "fields": [
    {"name": "before", "type": ["null", {"type": "record", "name": "Value", "fields": [
        {"name": "id", "type": "long"}, {"name": "owner", "type": "string"}, {"name": "balance", "type": "long"}]}], "default": null},
    {"name": "after", "type": ["null", "Value"], "default": null},
    {"name": "source", "type": {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql", "fields": [
        {"name": "version", "type": "string"}, {"name": "connector", "type": "string"}, {"name": "ts_ms", "type": "long"},
        {"name": "db", "type": "string"}, {"name": "lsn", "type": ["null", "long"], "default": null}]}},
    {"name": "op", "type": "string"},
    {"name": "ts_ms", "type": ["null", "long"], "default": null}
  ]
}`

const avroViewSQL = `
CREATE TABLE accounts (
  id BIGINT,
  owner STRING,
  balance BIGINT,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'kafka',
  'topic' = 'accounts',
  'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'debezium-avro-confluent',
  'debezium-avro-confluent.url' = '%s'
);

CREATE TABLE owner_totals (
  owner STRING,
  total BIGINT,
  n BIGINT,
  PRIMARY KEY (owner) NOT ENFORCED
) WITH (
  'connector' = 'jdbc',
  'url' = 'jdbc:postgresql://localhost:5432/postgres?sslmode=disable&host=%s',
  'table-name' = 'owner_totals',
  'username' = 'weir',
  'sink.buffer-flush.interval' = '100ms'
);

INSERT INTO owner_totals SELECT owner, SUM(balance), COUNT(*) FROM accounts GROUP BY owner;
`

// accountsModel is the source table that the change events describe.
type accountsModel struct {
	rows   map[int64][2]any // id -> owner, balance
	nextID int64
	rng    *rand.Rand
}

// events makes n changes to the model and returns their Debezium events:
// creates, updates (of the balance or the owner) and deletes.
func (m *accountsModel) events(t *testing.T, s hamba.Schema, schemaID, n int) []*kgo.Record {
	img := func(id int64, r [2]any) map[string]any {
		return map[string]any{"dbserver1.public.accounts.Value": map[string]any{"id": id, "owner": r[0], "balance": r[1]}}
	}
	var recs []*kgo.Record
	for range n {
		var id int64
		var op string
		var before, after any
		switch k := m.rng.IntN(10); {
		case k < 4 || len(m.rows) < 5:
			m.nextID++
			id, op = m.nextID, "c"
			r := [2]any{fmt.Sprint("owner-", m.rng.IntN(6)), int64(m.rng.IntN(1000))}
			m.rows[id], after = r, img(id, r)
		default:
			ids := make([]int64, 0, len(m.rows))
			for i := range m.rows {
				ids = append(ids, i)
			}
			slices.Sort(ids)
			id = ids[m.rng.IntN(len(ids))]
			old := m.rows[id]
			before = img(id, old)
			if k < 9 {
				op = "u"
				r := old
				if k == 8 {
					r[0] = fmt.Sprint("owner-", m.rng.IntN(6))
				} else {
					r[1] = int64(m.rng.IntN(1000))
				}
				m.rows[id], after = r, img(id, r)
			} else {
				op = "d"
				delete(m.rows, id)
			}
		}
		body := mustMarshal(t, s, map[string]any{
			"before": before, "after": after, "op": op,
			"source": map[string]any{"version": "2.5.0.Final", "connector": "postgresql", "ts_ms": int64(1700000000000), "db": "app", "lsn": nil},
			"ts_ms":  nil,
		})
		// keyed by the row: its changes stay in order in one partition
		recs = append(recs, &kgo.Record{Topic: "accounts", Key: []byte(fmt.Sprint(id)), Value: confluent(schemaID, body)})
	}
	return recs
}

// totals is the view the job keeps: owner -> "total n".
func (m *accountsModel) totals() map[string]string {
	sum, n := map[string]int64{}, map[string]int64{}
	for _, r := range m.rows {
		sum[r[0].(string)] += r[1].(int64)
		n[r[0].(string)]++
	}
	out := map[string]string{}
	for o := range sum {
		out[o] = fmt.Sprint(sum[o], " ", n[o])
	}
	return out
}

// Issue 40's check: a SQL job reads Debezium change events in Avro
// through the schema registry ('debezium-avro-confluent') from Kafka and
// keeps a GROUP BY view in PostgreSQL ('jdbc'); killed with SIGKILL
// repeatedly while events keep coming, and restarted on its checkpoint
// directory, it ends with the view equal to the source table's.
func TestDebeziumAvroToPostgresSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("runs weir and PostgreSQL")
	}
	pg, err := pgtest.Start(context.Background(), 2*time.Minute)
	if errors.Is(err, pgtest.ErrNotFound) && os.Getenv("WEIR_REQUIRE_POSTGRES") != "1" {
		t.Skipf("no PostgreSQL server (%v)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop() })
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE owner_totals (owner text PRIMARY KEY, total bigint NOT NULL, n bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	servers := cluster(t, "accounts")
	reg, err := schemaregistry.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	schemaID := reg.Register("accounts-value", "AVRO", accountsEnvelope)
	schema := hamba.MustParse(accountsEnvelope)
	seed := crashtest.Seed(t)
	model := &accountsModel{rows: map[int64][2]any{}, rng: rand.New(rand.NewPCG(seed, 40))}
	producer, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(servers, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produce := func(n int) {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := producer.ProduceSync(pctx, model.events(t, schema, schemaID, n)...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	view := func() map[string]string {
		rows, err := conn.Query(ctx, "SELECT owner, total, n FROM owner_totals")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var o string
			var total, n int64
			if err := rows.Scan(&o, &total, &n); err != nil {
				t.Fatal(err)
			}
			out[o] = fmt.Sprint(total, " ", n)
		}
		return out
	}
	// The first run reads from the earliest offset; restarts from the
	// latest: a restart that did not restore its checkpoint would then
	// miss events, and the view would never equal the source again.
	dir := t.TempDir()
	file, restarts := filepath.Join(dir, "view.sql"), filepath.Join(dir, "restart.sql")
	for f, mode := range map[string]string{file: "earliest-offset", restarts: "latest-offset"} {
		text := strings.Replace(fmt.Sprintf(avroViewSQL, servers, reg.URL, pg.Dir), "'earliest-offset'", "'"+mode+"'", 1)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := crashtest.Build(t, "github.com/weirstream/weir/cmd/weir")
	ck := t.TempDir()
	args := func(f string) []string {
		return []string{"sql", "-f", f, "--parallelism", "2", "--checkpoint-dir", ck, "--checkpoint-interval", "100ms"}
	}
	start := func(f string) (stop func()) {
		cmd := osexec.Command(bin, args(f)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		want := model.totals()
		var got map[string]string
		if !weirtest.Poll(2*time.Minute, func() bool {
			select {
			case <-exited:
				t.Fatalf("weir sql ended: %s", stderr.String())
			default:
			}
			got = view()
			return fmt.Sprint(got) == fmt.Sprint(want)
		}) {
			cmd.Process.Kill()
			t.Fatalf("the view never equalled the source:\n got %v\nwant %v", got, want)
		}
		return func() { cmd.Process.Kill(); <-exited }
	}
	// newest is the newest complete checkpoint's name ("" if none)
	newest := func() string {
		m, _ := filepath.Glob(filepath.Join(ck, "chk-*[0-9]"))
		slices.Sort(m)
		if len(m) == 0 {
			return ""
		}
		return m[len(m)-1]
	}

	produce(300)
	stop := start(file)
	// a checkpoint taken after every event was read
	seen := newest()
	if !weirtest.Poll(time.Minute, func() bool { return newest() > seen }) {
		t.Fatal("no checkpoint after the first run's events")
	}
	stop()

	rng := rand.New(rand.NewPCG(seed, 41))
	kills := 0
	for n := crashtest.Kills(5); kills < n; {
		produce(50 + rng.IntN(100))
		window := time.Duration(400+rng.IntN(800)) * time.Millisecond
		killed, _, stderr, err := crashtest.Attempt(osexec.Command(bin, args(restarts)...), window)
		if !killed {
			t.Fatalf("weir sql ended by itself after %d kills: %v\n%s", kills, err, stderr)
		}
		kills++
	}
	produce(100)
	stop = start(restarts)
	defer stop()
	t.Logf("%d kills; %d accounts of %d owners; the view equals the source", kills, len(model.rows), len(model.totals()))
}
