package connector

import (
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir/sql/types"
)

// LookupFactory is implemented by connectors whose tables can be looked
// up by key: the dimension table of a lookup join (`JOIN t FOR
// SYSTEM_TIME AS OF probe.proc_time ON probe.k = t.k`), as Flink's
// LookupTableSource.
type LookupFactory interface {
	Factory
	// CreateLookup validates t's options (the scan options and the
	// 'lookup.*' ones) for lookups by the columns keys (indexes in
	// t.Schema). It does no I/O.
	CreateLookup(t *Table, keys []int) (*LookupSource, error)
}

// LookupSource is what a lookup factory makes of a table.
type LookupSource struct {
	// Open makes one subtask's client, when the job runs (it may
	// connect).
	Open func(ctx context.Context) (LookupClient, error)
}

// LookupClient finds rows by key for one subtask; it is used by one
// goroutine.
type LookupClient interface {
	// Lookup returns the rows whose key columns equal key (one value per
	// key column, in the order given to CreateLookup, none NULL). The
	// rows and their values must not be changed by the caller; the
	// client may return the same rows again.
	Lookup(ctx context.Context, key []types.Value) ([]types.Row, error)
	Close() error
}

// LookupCacheOptions reads Flink's lookup cache options of a table:
// 'lookup.cache.max-rows' (0, the default: no cache) and
// 'lookup.cache.ttl' (how long an entry is used; default 10 s), and
// 'lookup.cache.caching-missing-key' (default true: an empty result is
// cached too).
func LookupCacheOptions(o *Options) (maxRows int, ttl time.Duration, missing bool) {
	maxRows = int(o.Int("lookup.cache.max-rows", 0))
	if maxRows < 0 {
		o.Invalid("lookup.cache.max-rows", "must not be negative")
	}
	ttl = o.Duration("lookup.cache.ttl", 10*time.Second)
	if ttl <= 0 {
		o.Invalid("lookup.cache.ttl", "must be positive")
	}
	missing = o.Bool("lookup.cache.caching-missing-key", true)
	return maxRows, ttl, missing
}

// CachedLookup wraps a client with a cache of at most maxRows keys, each
// used for ttl after it was loaded (Flink's partial lookup cache): the
// oldest entry makes room for a new one. now is the clock (time.Now
// outside tests). maxRows 0 returns c itself.
func CachedLookup(c LookupClient, maxRows int, ttl time.Duration, missing bool, now func() time.Time) LookupClient {
	if maxRows <= 0 {
		return c
	}
	return &lookupCache{c: c, max: maxRows, ttl: ttl, missing: missing, now: now, m: map[string]*cacheEntry{}}
}

type cacheEntry struct {
	key  string
	rows []types.Row
	at   time.Time
}

type lookupCache struct {
	c       LookupClient
	max     int
	ttl     time.Duration
	missing bool
	now     func() time.Time
	m       map[string]*cacheEntry
	fifo    []*cacheEntry // load order; entries replaced in m are skipped
}

func (l *lookupCache) Lookup(ctx context.Context, key []types.Value) ([]types.Row, error) {
	k := types.Key(key)
	now := l.now()
	if e, ok := l.m[k]; ok && now.Sub(e.at) < l.ttl {
		return e.rows, nil
	}
	rows, err := l.c.Lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 && !l.missing {
		delete(l.m, k)
		return rows, nil
	}
	e := &cacheEntry{key: k, rows: rows, at: now}
	l.m[k] = e
	l.fifo = append(l.fifo, e)
	for len(l.m) > l.max && len(l.fifo) > 0 {
		old := l.fifo[0]
		l.fifo = l.fifo[1:]
		if l.m[old.key] == old {
			delete(l.m, old.key)
		}
	}
	if len(l.fifo) > 4*l.max {
		// drop the stale entries of replaced keys
		live := l.fifo[:0]
		for _, x := range l.fifo {
			if l.m[x.key] == x {
				live = append(live, x)
			}
		}
		clear(l.fifo[len(live):])
		l.fifo = live
	}
	return rows, nil
}

func (l *lookupCache) Close() error { return l.c.Close() }

// CreateLookup finds t's connector and makes its lookup, or says that the
// connector cannot look up.
func CreateLookup(t *Table, keys []int) (*LookupSource, error) {
	f, err := Lookup(t)
	if err != nil {
		return nil, err
	}
	lf, ok := f.(LookupFactory)
	if !ok {
		return nil, fmt.Errorf("table '%s': the connector '%s' cannot look rows up (a lookup join needs a connector such as 'jdbc')", t.Name, f.Identifier())
	}
	return lf.CreateLookup(t, keys)
}

// CanLookup reports whether t's connector implements LookupFactory.
func CanLookup(t *Table) bool {
	f, err := Lookup(t)
	if err != nil {
		return false
	}
	_, ok := f.(LookupFactory)
	return ok
}
