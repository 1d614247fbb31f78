// Package cdcview is the CDC job of weir's PostgreSQL tests and of weir
// demo cdc: a per-group totals view of a source table, kept in sync
// through the CDC source instead of dual writes. The source table has an
// id (bigint primary key), a group column (text) and a value (bigint); the
// view has, per group, the sum of the values and the number of rows, and
// a group disappears from it when its last row goes. Writers changes the
// source concurrently (inserts, updates, rows moving between groups,
// deletes, transfers, aborted transactions) and Diff compares the view
// with a SELECT of the source.
package cdcview

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
)

// Config names the tables and the slot.
type Config struct {
	DSN  string
	Slot string
	// Source is the captured table (id bigint primary key, Group text,
	// Value bigint); View the view (Group text primary key, total bigint,
	// rows bigint, weir_position bigint).
	Source, View string
	Group, Value string
}

func (c Config) q(name string) string { return pgx.Identifier{name}.Sanitize() }

// Setup creates the two tables (dropping older ones).
func Setup(ctx context.Context, conn *pgx.Conn, c Config) error {
	for _, s := range []string{
		"DROP TABLE IF EXISTS " + c.q(c.Source) + ", " + c.q(c.View),
		fmt.Sprintf("CREATE TABLE %s (id bigint PRIMARY KEY, %s text NOT NULL, %s bigint NOT NULL)", c.q(c.Source), c.q(c.Group), c.q(c.Value)),
		fmt.Sprintf("CREATE TABLE %s (%s text PRIMARY KEY, total bigint NOT NULL, rows bigint NOT NULL, weir_position bigint NOT NULL)", c.q(c.View), c.q(c.Group)),
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("cdcview: %s: %w", s, err)
		}
	}
	return nil
}

// Row is a row of the source table.
type Row struct {
	ID    int64
	Group string
	Value int64
}

// Totals is a row of the view; Version orders its updates (the upsert
// sink's position) and keeps growing across the group's deletion.
type Totals struct {
	Total, Rows, Version int64
}

// CDC is the job's source configuration.
func (c Config) CDC() postgres.CDCConfig {
	return postgres.CDCConfig{DSN: c.DSN, TableName: c.Source, SlotName: c.Slot}
}

// Build builds the job: CDC source -> NormalizeChanges by id (before-images
// from state, so the table's default REPLICA IDENTITY does) -> totals per
// group -> UpsertChanges into the view.
func Build(c Config, opts ...weir.JobOption) *weir.Job {
	job := weir.NewJob("cdcview", opts...)
	var idx [3]int // column positions, found in the first record
	decode := func(r *postgres.Record) (Row, error) {
		if r.Truncate {
			return Row{}, postgres.ErrSkip // the writers never truncate
		}
		if idx == [3]int{} {
			idx = [3]int{r.Index("id"), r.Index(c.Group), r.Index(c.Value)}
			if idx[0] < 0 || idx[1] < 0 || idx[2] < 0 {
				return Row{}, fmt.Errorf("cdcview: %s lacks a column of id, %s, %s", r.QualifiedTable(), c.Group, c.Value)
			}
		}
		var row Row
		if err := r.Scan(idx[0], &row.ID); err != nil {
			return row, err
		}
		if r.KeyOnly {
			return row, nil // a tombstone: only the key counts
		}
		row.Group = r.String(idx[1])
		err := r.Scan(idx[2], &row.Value)
		return row, err
	}
	changes := weir.FromSource(job, "cdc", postgres.CDC(c.CDC(), decode), weir.NoWatermarks[weir.Change[Row]](), weir.UID("cdc"))
	rows := weir.NormalizeChanges(weir.KeyBy(changes, func(ch weir.Change[Row]) int64 { return ch.Value.ID }), weir.UID("rows"))
	totals := weir.ProcessWith(weir.KeyBy(rows, func(ch weir.Change[Row]) string { return ch.Value.Group }),
		func() weir.KeyedProcessFunction[string, weir.Change[Row], weir.Change[weir.KeyValue[string, Totals]]] {
			return &sum{}
		}, weir.Name("totals"), weir.UID("totals"))
	weir.To(totals, postgres.UpsertChanges(c.DSN, postgres.Table{Name: c.View, Key: []string{c.Group}, Columns: []string{"total", "rows"}},
		func(kv weir.KeyValue[string, Totals]) ([]any, int64) {
			return []any{kv.Key, kv.Value.Total, kv.Value.Rows}, kv.Value.Version
		}, postgres.Name(c.View)), weir.Name("view"), weir.UID("view"))
	return job
}

// sum keeps a group's totals (for ever: the version must keep growing
// after the group empties) and emits an upsert of the new totals, or a
// delete when the group has no row left.
type sum struct {
	st *weir.ValueState[string, Totals]
}

func (f *sum) Open(rc *weir.RuntimeContext[string]) error {
	f.st = weir.NewValueState[Totals](rc, "totals")
	return nil
}

func (f *sum) ProcessElement(ctx *weir.KeyedContext[string, weir.Change[weir.KeyValue[string, Totals]]], in weir.Change[Row]) error {
	t, _ := f.st.Value()
	if in.Adds() {
		t.Total += in.Value.Value
		t.Rows++
	} else {
		t.Total -= in.Value.Value
		t.Rows--
	}
	t.Version++
	f.st.Update(t)
	kind := weir.UpdateAfter
	if t.Rows <= 0 {
		kind = weir.Delete
	}
	ctx.Emit(weir.Change[weir.KeyValue[string, Totals]]{Kind: kind, Value: weir.KeyValue[string, Totals]{Key: ctx.Key(), Value: t}})
	return nil
}

// Diff compares the view with the SELECT of the source it stands for:
// "" when equal, else what differs. rows is the number of groups.
func Diff(ctx context.Context, conn *pgx.Conn, c Config) (diff string, groups int, err error) {
	read := func(q string) (map[string]string, error) {
		rs, err := conn.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		for rs.Next() {
			var g string
			var total, n int64
			if err := rs.Scan(&g, &total, &n); err != nil {
				return nil, err
			}
			m[g] = fmt.Sprintf("total %d rows %d", total, n)
		}
		return m, rs.Err()
	}
	src, err := read(fmt.Sprintf("SELECT %s, sum(%s)::bigint, count(*) FROM %s GROUP BY 1", c.q(c.Group), c.q(c.Value), c.q(c.Source)))
	if err != nil {
		return "", 0, err
	}
	view, err := read(fmt.Sprintf("SELECT %s, total, rows FROM %s", c.q(c.Group), c.q(c.View)))
	if err != nil {
		return "", 0, err
	}
	var d []string
	for g, s := range src {
		if view[g] != s {
			d = append(d, fmt.Sprintf("%s: SELECT has %s, the view %q", g, s, view[g]))
		}
	}
	for g, v := range view {
		if _, ok := src[g]; !ok {
			d = append(d, fmt.Sprintf("%s: the view has %s, SELECT has no rows", g, v))
		}
	}
	if len(d) > 5 {
		d = append(d[:5], fmt.Sprintf("... %d more", len(d)-5))
	}
	return strings.Join(d, "; "), len(src), nil
}

// Stats counts what the writers did.
type Stats struct {
	Inserts, Updates, Moves, Deletes, Transfers, Aborted atomic.Int64
}

func (s *Stats) String() string {
	return fmt.Sprintf("%d inserts, %d updates, %d moves between groups, %d deletes, %d transfers, %d aborted transactions",
		s.Inserts.Load(), s.Updates.Load(), s.Moves.Load(), s.Deletes.Load(), s.Transfers.Load(), s.Aborted.Load())
}

// Groups are the writers' group names.
var Groups = []string{"ada", "bob", "cyd", "dee", "eve", "fay", "gus", "hal"}

// Writers runs n concurrent writers, each on its own connection and its
// own ids, until ctx ends or each did ops operations (0: no limit): inserts,
// value updates, moves to another group, deletes, transfers between two
// rows in one transaction, and transactions that are rolled back.
// Deadlocks and serialization failures abort a transaction, which counts
// as aborted.
func Writers(ctx context.Context, dsn string, c Config, n, ops int, seed uint64, st *Stats) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = writer(ctx, dsn, c, w, ops, rand.New(rand.NewPCG(seed, uint64(w))), st)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func writer(ctx context.Context, dsn string, c Config, w, ops int, rng *rand.Rand, st *Stats) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	src, grp, val := c.q(c.Source), c.q(c.Group), c.q(c.Value)
	var live []int64
	// Ids per writer, from a random base: calls with other seeds do not collide.
	next := int64(w)<<40 + rng.Int64N(1<<30)<<8
	for i := 0; ops == 0 || i < ops; i++ {
		if ctx.Err() != nil {
			return nil
		}
		var err error
		op := rng.IntN(100)
		if len(live) < 3 {
			op = 0
		}
		var id int64
		if len(live) > 0 {
			id = live[rng.IntN(len(live))]
		}
		g := Groups[rng.IntN(len(Groups))]
		switch {
		case op < 35:
			next++
			_, err = conn.Exec(ctx, "INSERT INTO "+src+" (id, "+grp+", "+val+") VALUES ($1, $2, $3)", next, g, rng.Int64N(1000))
			if err == nil {
				live = append(live, next)
				st.Inserts.Add(1)
			}
		case op < 55:
			_, err = conn.Exec(ctx, "UPDATE "+src+" SET "+val+" = "+val+" + $2 WHERE id = $1", id, rng.Int64N(200)-100)
			st.Updates.Add(1)
		case op < 65:
			_, err = conn.Exec(ctx, "UPDATE "+src+" SET "+grp+" = $2 WHERE id = $1", id, g)
			st.Moves.Add(1)
		case op < 80:
			_, err = conn.Exec(ctx, "DELETE FROM "+src+" WHERE id = $1", id)
			if err == nil {
				for k, x := range live {
					if x == id {
						live = append(live[:k], live[k+1:]...)
						break
					}
				}
				st.Deletes.Add(1)
			}
		case op < 92:
			to := live[rng.IntN(len(live))]
			amount := rng.Int64N(50)
			err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "UPDATE "+src+" SET "+val+" = "+val+" - $2 WHERE id = $1", id, amount); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, "UPDATE "+src+" SET "+val+" = "+val+" + $2 WHERE id = $1", to, amount)
				return err
			})
			if err == nil {
				st.Transfers.Add(1)
			}
		default:
			// Written, then rolled back: the view must never see it.
			tx, berr := conn.Begin(ctx)
			if berr != nil {
				if ctx.Err() != nil {
					return nil
				}
				return berr
			}
			next++
			tx.Exec(ctx, "INSERT INTO "+src+" (id, "+grp+", "+val+") VALUES ($1, $2, 1000000)", next, g)
			tx.Exec(ctx, "UPDATE "+src+" SET "+val+" = 1000000 WHERE id = $1", id)
			tx.Exec(ctx, "DELETE FROM "+src+" WHERE id = $1", live[0])
			if err := tx.Rollback(ctx); err != nil && ctx.Err() == nil {
				return err
			}
			st.Aborted.Add(1)
		}
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") {
				st.Aborted.Add(1)
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cdcview: writer %d: %w", w, err)
		}
	}
	return nil
}
