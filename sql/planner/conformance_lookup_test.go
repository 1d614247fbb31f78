package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

// The test 'values' connector looks rows up too (a lookup join's
// dimension table), from the rows of its 'data-id' as they are when the
// job starts; sql/connector/jdbc's tests look up a real PostgreSQL table.
func (valuesFactory) CreateLookup(t *connector.Table, keys []int) (*connector.LookupSource, error) {
	o := connector.NewOptions(t)
	id := o.Required("data-id")
	maxRows, ttl, missing := connector.LookupCacheOptions(o)
	if err := o.Err(); err != nil {
		return nil, err
	}
	return &connector.LookupSource{Open: func(context.Context) (connector.LookupClient, error) {
		values.mu.Lock()
		lines, ok := values.data[id]
		values.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("table '%s': no test data '%s'", t.Name, id)
		}
		c := &valuesLookup{byKey: map[string][]types.Row{}}
		for _, l := range lines {
			r, err := parseRowLine(l, t.Schema)
			if err != nil {
				return nil, err
			}
			k := make([]types.Value, len(keys))
			for i, ki := range keys {
				k[i] = r.Values[ki]
			}
			c.byKey[types.Key(k)] = append(c.byKey[types.Key(k)], r)
		}
		return connector.CachedLookup(c, maxRows, ttl, missing, time.Now), nil
	}}, nil
}

type valuesLookup struct{ byKey map[string][]types.Row }

func (c *valuesLookup) Lookup(_ context.Context, key []types.Value) ([]types.Row, error) {
	return c.byKey[types.Key(key)], nil
}

func (c *valuesLookup) Close() error { return nil }

// scanValues is the 'values' connector without lookups ('values-scan'):
// the processing-time temporal join against a bounded table
// (join_proctime.go) is planned only for tables whose connector cannot look
// up, so its conformance cases (testdata/conformance/nexmark_features) need
// a table that only scans.
type scanValues struct{}

func (scanValues) Identifier() string { return "values-scan" }

func (scanValues) CreateSource(t *connector.Table) (*connector.Source, error) {
	return valuesFactory{}.CreateSource(t)
}

func init() { connector.Register(scanValues{}) }
