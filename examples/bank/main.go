// Command bank is event sourcing with weir: bank accounts whose events
// (opened, deposit, withdrawal, transfer legs, and the compensating
// reversal of a withdrawal that overdrew an account) are kept in an
// append-only log, folded per account into state with weir.Fold, and the
// state kept as a read model in PostgreSQL through the upsert sink for
// changelogs (postgres.UpsertChanges).
//
// The log is the embedded log's topic "bank" in --log-dir (created with a
// built-in history when it does not exist) or a file of JSON lines
// (--events). Nothing in the log is ever edited: the overdraft is not
// deleted, it is compensated by a later "reversal" event, and both stay.
//
//	go run ./examples/bank --dsn 'host=/tmp/pg port=5432 user=weir dbname=postgres'
//	go run ./examples/bank --dsn ... --model v2 --table accounts_v2
//
// The second command rebuilds the read model with new code (model v2 also
// counts each account's operations and rejected overdrafts): it replays the
// log from offset 0 into a new table, as a blue/green rebuild does, while
// the old table keeps serving; readers switch when it has caught up.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/connector/postgres"
)

// Event is one fact of the bank's log. Seq is its place in the log
// (strictly increasing); a reversal names the withdrawal it compensates in
// Ref.
type Event struct {
	Seq     int64  `json:"seq"`
	Account string `json:"account"`
	Kind    string `json:"kind"` // opened, deposit, withdrawal, transfer-out, transfer-in, reversal, closed
	Amount  int64  `json:"amount,omitempty"`
	Ref     int64  `json:"ref,omitempty"`
	Peer    string `json:"peer,omitempty"` // the other account of a transfer
}

// Account is the state of an account: its events integrated.
type Account struct {
	Balance int64
	Ops     int64 // events folded (model v2)
	Refused int64 // overdrafts compensated (model v2)
	LastSeq int64 // the read model's position
}

// History is the built-in log: deposits, withdrawals, a transfer (two
// events, one per account), a withdrawal that overdraws bob, and its
// compensating reversal appended by the bank's overdraft policy.
func History() []Event {
	ev := []Event{
		{Account: "alice", Kind: "opened"},
		{Account: "bob", Kind: "opened"},
		{Account: "carol", Kind: "opened"},
		{Account: "alice", Kind: "deposit", Amount: 500},
		{Account: "bob", Kind: "deposit", Amount: 100},
		{Account: "alice", Kind: "withdrawal", Amount: 120},
		{Account: "alice", Kind: "transfer-out", Amount: 200, Peer: "bob"},
		{Account: "bob", Kind: "transfer-in", Amount: 200, Peer: "alice"},
		{Account: "bob", Kind: "withdrawal", Amount: 450}, // overdraws bob (300)
		{Account: "bob", Kind: "reversal", Amount: 450, Ref: 9},
		{Account: "carol", Kind: "deposit", Amount: 40},
		{Account: "carol", Kind: "withdrawal", Amount: 40},
		{Account: "carol", Kind: "closed"},
		{Account: "bob", Kind: "withdrawal", Amount: 50},
	}
	for i := range ev {
		ev[i].Seq = int64(i + 1)
	}
	return ev
}

// Fold returns the projection of one account's events for a model: v1
// keeps the balance, v2 also counts operations and refused overdrafts (the
// "new code" a rebuild runs). The fold is deterministic (no clock, no
// I/O), so every replay of the log gives the same state.
func Fold(model string) func(string, weir.Opt[Account], Event) (weir.Opt[Account], error) {
	return func(acct string, st weir.Opt[Account], e Event) (weir.Opt[Account], error) {
		a, open := st.Get()
		if e.Kind == "opened" {
			if open {
				return st, fmt.Errorf("event %d opens account %s, which is open", e.Seq, acct)
			}
			return weir.Some(Account{LastSeq: e.Seq}), nil
		}
		if !open {
			return st, fmt.Errorf("event %d (%s) on account %s, which is not open", e.Seq, e.Kind, acct)
		}
		switch e.Kind {
		case "deposit", "transfer-in":
			a.Balance += e.Amount
		case "withdrawal", "transfer-out":
			// The withdrawal happened (the log says so); a balance below
			// zero is the overdraft the policy compensates.
			a.Balance -= e.Amount
		case "reversal":
			a.Balance += e.Amount
			if model == "v2" {
				a.Refused++
			}
		case "closed":
			return weir.None[Account](), nil
		default:
			return st, fmt.Errorf("event %d: unknown kind %q", e.Seq, e.Kind)
		}
		if model == "v2" {
			a.Ops++
		}
		a.LastSeq = e.Seq
		return weir.Some(a), nil
	}
}

// Config is what a run needs.
type Config struct {
	DSN    string
	LogDir string // the embedded log (topic "bank")
	Events string // or a file of JSON lines
	Model  string // v1 or v2
	Table  string // the read model
}

// WriteLog appends events to topic "bank" of the embedded log in dir,
// creating it (one partition: the log's order is the events' order).
func WriteLog(dir string, events []Event) error {
	topic, err := wlog.CreateTopic(dir, "bank", wlog.TopicConfig{Partitions: 1})
	if err != nil {
		return err
	}
	w, err := topic.OpenWriter(0)
	if err != nil {
		return err
	}
	recs := make([]wlog.Record, len(events))
	for i, e := range events {
		v, _ := json.Marshal(e)
		recs[i] = wlog.Record{Key: []byte(e.Account), Value: v}
	}
	if _, err := w.Append(recs); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// Setup creates the read model's table if missing.
func Setup(ctx context.Context, conn *pgx.Conn, table string) error {
	_, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+pgx.Identifier{table}.Sanitize()+
		" (account text PRIMARY KEY, balance bigint NOT NULL, ops bigint NOT NULL, refused bigint NOT NULL, weir_position bigint NOT NULL)")
	return err
}

// Run folds the whole log, from offset 0, into the read model: a bounded
// job that ends at the end of the log.
func Run(ctx context.Context, c Config) error {
	if c.Model != "v1" && c.Model != "v2" {
		return fmt.Errorf("bank: model %q: want v1 or v2", c.Model)
	}
	job := weir.NewJob("bank-" + c.Model)
	var events *weir.Stream[Event]
	if c.Events != "" {
		events = weir.FromSource(job, "events", file.JSONLines[Event]([]string{c.Events}), weir.NoWatermarks[Event]())
	} else {
		decode := func(r wlog.Record) (Event, error) {
			var e Event
			err := json.Unmarshal(r.Value, &e)
			return e, err
		}
		events = weir.FromSource(job, "events", wlog.Source(c.LogDir, "bank", decode, wlog.StartFrom(wlog.Earliest())), weir.NoWatermarks[Event]())
	}
	// A new model is new code: a new UID, so no state of the old one is
	// ever restored into it.
	accounts := weir.Fold(weir.KeyBy(events, func(e Event) string { return e.Account }), Fold(c.Model), weir.UID("fold-"+c.Model))
	weir.To(accounts, postgres.UpsertChanges(c.DSN, postgres.Table{Name: c.Table, Key: []string{"account"}, Columns: []string{"balance", "ops", "refused"}},
		func(kv weir.KeyValue[string, Account]) ([]any, int64) {
			return []any{kv.Key, kv.Value.Balance, kv.Value.Ops, kv.Value.Refused}, kv.Value.LastSeq
		}))
	return job.Run(ctx)
}

func main() {
	var c Config
	flag.StringVar(&c.DSN, "dsn", os.Getenv("WEIR_DSN"), "PostgreSQL connection string (default $WEIR_DSN)")
	flag.StringVar(&c.LogDir, "log-dir", filepath.Join(os.TempDir(), "weir-bank-log"), "the embedded log's directory (created with the built-in history if missing)")
	flag.StringVar(&c.Events, "events", "", "read the events from this file of JSON lines instead of the log")
	flag.StringVar(&c.Model, "model", "v1", "the projection's code: v1 (balance) or v2 (also operations and refused overdrafts)")
	flag.StringVar(&c.Table, "table", "accounts", "the read model's table (created if missing)")
	flag.Parse()
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "bank:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c Config) error {
	if c.DSN == "" {
		return errors.New("--dsn (or $WEIR_DSN) is required: a PostgreSQL database for the read model")
	}
	if c.Events == "" {
		if _, err := os.Stat(filepath.Join(c.LogDir, "bank")); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
				return err
			}
			if err := WriteLog(c.LogDir, History()); err != nil {
				return err
			}
		}
	}
	conn, err := pgx.Connect(ctx, c.DSN)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if err := Setup(ctx, conn, c.Table); err != nil {
		return err
	}
	if err := Run(ctx, c); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, "SELECT account, balance, ops, refused FROM "+pgx.Identifier{c.Table}.Sanitize()+" ORDER BY account")
	if err != nil {
		return err
	}
	fmt.Printf("read model %s (model %s):\n", c.Table, c.Model)
	for rows.Next() {
		var acct string
		var bal, ops, refused int64
		if err := rows.Scan(&acct, &bal, &ops, &refused); err != nil {
			return err
		}
		fmt.Printf("  %-8s balance %6d  ops %3d  refused overdrafts %d\n", acct, bal, ops, refused)
	}
	return rows.Err()
}
