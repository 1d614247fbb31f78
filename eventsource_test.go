package weir_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

// acctEvent is an event of a bank account's log. A refund is the
// compensating event of a charge: the log keeps both.
type acctEvent struct {
	Acct   int
	Kind   string // open, deposit, charge, refund, close
	Amount int
	Ref    int // the charge a refund compensates
	Seq    int
}

type account struct {
	Balance int
	Charges int // charges not refunded
	Refused int // charges beyond the balance, kept as facts rather than errors
}

func accountLog(seed uint64, n, accts int) []acctEvent {
	rng := newRand(seed)
	open := map[int]bool{}
	charges := map[int][]int{} // open charges per account, by Seq
	var out []acctEvent
	for i := range n {
		a := rng.IntN(accts)
		e := acctEvent{Acct: a, Seq: i}
		switch r := rng.IntN(20); {
		case !open[a]:
			e.Kind = "open"
			open[a] = true
		case r == 0:
			e.Kind = "close"
			open[a] = false
			charges[a] = nil
		case r < 8:
			e.Kind, e.Amount = "deposit", 1+rng.IntN(50)
		case r < 15:
			e.Kind, e.Amount = "charge", 1+rng.IntN(60)
			charges[a] = append(charges[a], i)
		case len(charges[a]) > 0:
			e.Kind = "refund"
			j := rng.IntN(len(charges[a]))
			e.Ref = charges[a][j]
			charges[a] = append(charges[a][:j], charges[a][j+1:]...)
		default:
			e.Kind, e.Amount = "deposit", 1
		}
		out = append(out, e)
	}
	return out
}

// foldAccount is the projection's code. amounts maps a charge of the log
// to its amount, which a refund gives back (a real log would carry it in
// the refund event).
func foldAccount(withRefused bool, amounts map[int]int) func(int, weir.Opt[account], acctEvent) (weir.Opt[account], error) {
	return func(_ int, st weir.Opt[account], e acctEvent) (weir.Opt[account], error) {
		s, ok := st.Get()
		switch e.Kind {
		case "open":
			return weir.Some(account{}), nil
		case "close":
			return weir.None[account](), nil
		}
		if !ok {
			return st, fmt.Errorf("%s on account %d, which is not open", e.Kind, e.Acct)
		}
		switch e.Kind {
		case "deposit":
			s.Balance += e.Amount
		case "charge":
			if withRefused && e.Amount > s.Balance {
				s.Refused++
				break
			}
			s.Balance -= e.Amount
			s.Charges++
		case "refund":
			s.Charges--
			s.Balance += amounts[e.Ref]
		}
		return weir.Some(s), nil
	}
}

func runFold(t *testing.T, p int, log []acctEvent, fn func(int, weir.Opt[account], acctEvent) (weir.Opt[account], error), uid string) []weir.Change[weir.KeyValue[int, account]] {
	t.Helper()
	job := weir.NewJob("accounts", weir.Parallelism(p), weir.BatchSize(8))
	src := weir.FromSource(job, "log", weir.SliceSource(log), weir.NoWatermarks[acctEvent]())
	out := weir.Collect(weir.Fold(weir.KeyBy(src, func(e acctEvent) int { return e.Acct }), fn, weir.UID(uid)))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out.Items()
}

// foldModel folds the log per key in order and renders each key's
// changelog.
func foldModel(log []acctEvent, fn func(int, weir.Opt[account], acctEvent) (weir.Opt[account], error)) (map[int][]string, map[weir.KeyValue[int, account]]int) {
	st := map[int]account{}
	per := map[int][]string{}
	for _, e := range log {
		old, had := st[e.Acct]
		next, err := fn(e.Acct, weir.Opt[account]{V: old, OK: had}, e)
		if err != nil {
			panic(err)
		}
		switch {
		case !next.OK && had:
			per[e.Acct] = append(per[e.Acct], fmt.Sprintf("-D%v", old))
			delete(st, e.Acct)
		case next.OK && !had:
			per[e.Acct] = append(per[e.Acct], fmt.Sprintf("+I%v", next.V))
			st[e.Acct] = next.V
		case next.OK:
			per[e.Acct] = append(per[e.Acct], fmt.Sprintf("-U%v", old), fmt.Sprintf("+U%v", next.V))
			st[e.Acct] = next.V
		}
	}
	final := map[weir.KeyValue[int, account]]int{}
	for k, v := range st {
		final[weir.KeyValue[int, account]{Key: k, Value: v}] = 1
	}
	return per, final
}

func perKey(items []weir.Change[weir.KeyValue[int, account]]) map[int][]string {
	per := map[int][]string{}
	for _, c := range items {
		per[c.Value.Key] = append(per[c.Value.Key], fmt.Sprintf("%v%v", c.Kind, c.Value.Value))
	}
	return per
}

// TestFoldProjectsTheLogAndRebuildsWithNewCode folds an account log with
// compensating refunds into balances, checks the changelog per key and the
// final read model against a sequential fold at parallelism 1-4, then
// rebuilds the view from offset 0 with new code (refusing overdrafts) under
// a new UID and checks it against the new model.
func TestFoldProjectsTheLogAndRebuildsWithNewCode(t *testing.T) {
	log := accountLog(41, 3000, 17)
	amounts := map[int]int{}
	for _, e := range log {
		if e.Kind == "charge" {
			amounts[e.Seq] = e.Amount
		}
	}
	for _, v := range []struct {
		uid string
		fn  func(int, weir.Opt[account], acctEvent) (weir.Opt[account], error)
	}{{"accounts-v1", foldAccount(false, amounts)}, {"accounts-v2", foldAccount(true, amounts)}} {
		wantPer, wantFinal := foldModel(log, v.fn)
		for p := 1; p <= 4; p++ {
			items := runFold(t, p, log, v.fn, v.uid)
			if got := perKey(items); fmt.Sprint(got) != fmt.Sprint(wantPer) {
				t.Fatalf("%s p=%d: changelogs per key differ from the model", v.uid, p)
			}
			if got := view(t, items); fmt.Sprint(got) != fmt.Sprint(wantFinal) {
				t.Fatalf("%s p=%d: read model\n got %v\nwant %v", v.uid, p, got, wantFinal)
			}
		}
	}
	v1, _ := foldModel(log, foldAccount(false, amounts))
	v2, _ := foldModel(log, foldAccount(true, amounts))
	if fmt.Sprint(v1) == fmt.Sprint(v2) {
		t.Fatal("the new code derives the same view: the rebuild shows nothing")
	}
}

func TestFoldErrorNamesKeyAndEvent(t *testing.T) {
	log := []acctEvent{{Acct: 7, Kind: "deposit", Amount: 5}}
	amounts := map[int]int{}
	job := weir.NewJob("bad-log")
	src := weir.FromSource(job, "log", weir.SliceSource(log), weir.NoWatermarks[acctEvent]())
	weir.Collect(weir.Fold(weir.KeyBy(src, func(e acctEvent) int { return e.Acct }), foldAccount(false, amounts)))
	err := job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "key 7") || !strings.Contains(err.Error(), "not open") {
		t.Fatalf("error = %v; want one naming key 7 and the cause", err)
	}
}
