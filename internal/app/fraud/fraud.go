// Package fraud is the workload of `weir demo fraud`: seeded card
// transactions with planted fraud, and the CEP patterns that find it.
package fraud

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/weirstream/weir/cep"
)

// Txn is one card transaction.
type Txn struct {
	Card     string
	Amount   float64 // in the card's currency units
	Country  string
	Declined bool
	TS       time.Time
}

// Config is the generator's.
type Config struct {
	Cards  int
	Events int64
	Seed   uint64
	// Start is the event time of the first transaction; transactions are
	// Gap apart in event time over all cards.
	Start time.Time
	Gap   time.Duration
	// Fraud is the share of events that begin a planted fraud scenario
	// (a test charge then a large foreign one, or a run of declines).
	Fraud float64
}

// Default is the demo's configuration.
func Default() Config {
	return Config{Cards: 2000, Events: 200_000, Seed: 42, Start: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Gap: 50 * time.Millisecond, Fraud: 0.002}
}

var countries = []string{"DE", "FR", "NL", "US", "GB", "ES", "IT", "PL"}

// Gen is transaction i. Ordinary transactions are 10-300 in the card's
// home country, 3% declined; a planted scenario uses the events after i on
// the same card (i+1, i+2 go to the same card: see Card). Events arrive up
// to 2 s out of order.
func (c Config) Gen(i int64, rng *rand.Rand) Txn {
	// The scenario an event belongs to is a pure function of (seed, i), so
	// that splits of the index space agree.
	home := func(card int) string { return countries[card%len(countries)] }
	card, step, kind := c.scenario(i)
	t := Txn{Card: fmt.Sprintf("card-%05d", card), Country: home(card),
		TS: c.Start.Add(time.Duration(i)*c.Gap - time.Duration(rng.IntN(2000))*time.Millisecond)}
	switch kind {
	case 1: // test charge, then a large foreign one
		if step == 0 {
			t.Amount = 1 + float64(rng.IntN(300))/100
		} else {
			t.Amount = 800 + float64(rng.IntN(4000))
			t.Country = countries[(card+1+rng.IntN(len(countries)-1))%len(countries)]
		}
		// keep the planted events in order despite the disorder
		t.TS = c.Start.Add(time.Duration(i) * c.Gap)
	case 2: // three declined attempts
		t.Amount = 50 + float64(rng.IntN(500))
		t.Declined = true
		t.TS = c.Start.Add(time.Duration(i) * c.Gap)
	default:
		t.Amount = 10 + float64(rng.IntN(29000))/100
		t.Declined = rng.Float64() < 0.03
	}
	return t
}

// scenario says which card event i is for, and whether it is step 0, 1
// or 2 of a planted scenario (kind 1: small then large; kind 2: declines).
func (c Config) scenario(i int64) (card, step, kind int) {
	// A scenario starts at i when a hash of (seed, i) says so; its later
	// steps are i+1 and i+2. Look back two events.
	for back := int64(0); back <= 2; back++ {
		j := i - back
		if j < 0 {
			break
		}
		h := mix(c.Seed, uint64(j))
		if float64(h%1_000_000)/1e6 < c.Fraud {
			k := 1 + int(h>>32)%2
			if k == 1 && back == 2 {
				continue // small-then-large has two steps
			}
			return int((h >> 40) % uint64(c.Cards)), int(back), k
		}
	}
	h := mix(c.Seed^0x9e3779b97f4a7c15, uint64(i))
	return int(h % uint64(c.Cards)), 0, 0
}

func mix(seed, x uint64) uint64 {
	x ^= seed
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Pattern names, in DetectAll's order.
var Names = []string{"small-then-large-abroad", "three-declined"}

// Patterns are the demo's: a small approved charge (a card test), then a
// large approved one from another country within five minutes; and three
// declined attempts in a row (strict) within ten minutes. Both skip past a
// match's last event, so that one burst raises one alert.
func Patterns() []*cep.Pattern[Txn] {
	smallThenLarge := cep.Begin[Txn]("small", cep.SkipPastLastEvent()).
		Where(func(t Txn) bool { return !t.Declined && t.Amount < 5 }).
		FollowedBy("large").WhereIter(func(t Txn, ctx *cep.Context[Txn]) bool {
		if t.Declined || t.Amount < 500 {
			return false
		}
		small := ctx.EventsForPattern("small")
		return len(small) > 0 && small[0].Country != t.Country
	}).Within(5 * time.Minute)
	declined := cep.Begin[Txn]("declined", cep.SkipPastLastEvent()).
		Where(func(t Txn) bool { return t.Declined }).Times(3).Consecutive().
		Within(10 * time.Minute)
	return []*cep.Pattern[Txn]{smallThenLarge, declined}
}
