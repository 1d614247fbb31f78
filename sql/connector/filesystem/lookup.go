package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

var _ connector.LookupFactory = Factory{}

// lookupTTLKey is Flink's 'lookup.join.cache.ttl' of the filesystem
// connector: how long a subtask uses the table it loaded before loading
// it again.
const lookupTTLKey = "lookup.join.cache.ttl"

// CreateLookup implements connector.LookupFactory, as Flink's filesystem
// connector (FileSystemLookupFunction): a subtask's client reads the
// whole table (every file under 'path', in its format) into memory at its
// first lookup and answers from there, reading it again once
// 'lookup.join.cache.ttl' (default 60 min) has passed since. A record
// that does not decode fails the lookup with the file, line and offset,
// as it fails a scan.
func (f Factory) CreateLookup(t *connector.Table, keys []int) (*connector.LookupSource, error) {
	src, err := f.CreateSource(t)
	if err != nil {
		return nil, err
	}
	if src.Changelog != types.InsertOnly {
		return nil, fmt.Errorf("table '%s': a lookup join reads a filesystem table of inserts only, not a changelog ('format' %s)", t.Name, connector.NewOptions(t).String("format", ""))
	}
	o := connector.NewOptions(t)
	o.Declare(allOptions(t)...)
	ttl := o.Duration(lookupTTLKey, 60*time.Minute)
	if ttl <= 0 {
		o.Invalid(lookupTTLKey, "must be positive")
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	return &connector.LookupSource{Open: func(context.Context) (connector.LookupClient, error) {
		// one integer key (Nexmark q13's): a map by the integer
		intKey := len(keys) == 1 && t.Schema[keys[0]].Type.IsInteger()
		return &fsLookup{name: t.Name, src: src.Source, keys: keys, intKey: intKey, ttl: ttl, afterFunc: afterFunc}, nil
	}}, nil
}

// allOptions lists t's option keys (CreateSource has checked them).
func allOptions(t *connector.Table) []string {
	var ks []string
	for k := range t.Options {
		ks = append(ks, k)
	}
	return ks
}

// fsLookup is one subtask's client: the table's rows by key.
type fsLookup struct {
	name string
	src  weir.Source[types.Row]
	keys []int
	ttl  time.Duration
	// afterFunc starts the TTL's timer (time.AfterFunc outside tests):
	// a lookup reads a flag the timer sets, not the clock
	afterFunc func(time.Duration, func()) func() bool
	expired   atomic.Bool
	stop      func() bool // the TTL timer's
	loaded    bool
	rows      map[string][]types.Row
	intKey    bool // one integer key column: byInt, not rows
	byInt     map[int64][]types.Row
	buf       []byte
}

func (l *fsLookup) Lookup(ctx context.Context, key []types.Value) ([]types.Row, error) {
	if !l.loaded || l.expired.Load() {
		if err := l.load(ctx); err != nil {
			return nil, err
		}
	}
	if l.intKey {
		return l.byInt[key[0].I], nil
	}
	l.buf = types.AppendKey(l.buf[:0], key)
	return l.rows[string(l.buf)], nil
}

// load reads the whole table.
func (l *fsLookup) load(ctx context.Context) error {
	splits, err := l.src.Splits(ctx)
	if err != nil {
		return fmt.Errorf("table '%s': %w", l.name, err)
	}
	rows, byInt := map[string][]types.Row{}, map[int64][]types.Row{}
	dst := make([]types.Row, 256)
	var kv []types.Value
	for _, sp := range splits {
		r, err := l.src.Open(ctx, sp)
		if err != nil {
			return fmt.Errorf("table '%s': %w", l.name, err)
		}
		for {
			n, err := r.Read(ctx, dst)
			for _, row := range dst[:n] {
				kv = kv[:0]
				null := false
				for _, k := range l.keys {
					null = null || row.Values[k].Null
					kv = append(kv, row.Values[k])
				}
				if null {
					continue // a NULL key equals nothing
				}
				kept := types.Row{Kind: row.Kind, Values: append([]types.Value(nil), row.Values...)}
				if l.intKey {
					byInt[kv[0].I] = append(byInt[kv[0].I], kept)
					continue
				}
				k := types.Key(kv)
				rows[k] = append(rows[k], kept)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return fmt.Errorf("table '%s': %w", l.name, err)
			}
		}
		if err := r.Close(); err != nil {
			return fmt.Errorf("table '%s': %w", l.name, err)
		}
	}
	l.rows, l.byInt, l.loaded = rows, byInt, true
	l.expired.Store(false)
	l.stop = l.afterFunc(l.ttl, func() { l.expired.Store(true) })
	return nil
}

func (l *fsLookup) Close() error {
	if l.stop != nil {
		l.stop()
	}
	return nil
}

// afterFunc is time.AfterFunc, returning the timer's Stop.
func afterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
