package connector_test

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

type countingLookup struct{ calls map[int64]int }

func (c *countingLookup) Lookup(_ context.Context, key []types.Value) ([]types.Row, error) {
	c.calls[key[0].I]++
	if key[0].I < 0 {
		return nil, nil
	}
	return []types.Row{{Values: []types.Value{key[0]}}}, nil
}

func (c *countingLookup) Close() error { return nil }

// The cache answers a key within its TTL, loads it again after, keeps at
// most max-rows keys (the oldest loaded goes first) and caches missing keys
// only when told to.
func TestCachedLookup(t *testing.T) {
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	inner := &countingLookup{calls: map[int64]int{}}
	c := connector.CachedLookup(inner, 2, 10*time.Second, false, clock)
	get := func(k int64) {
		if _, err := c.Lookup(context.Background(), []types.Value{types.IntValue(k)}); err != nil {
			t.Fatal(err)
		}
	}
	get(1)
	get(1)
	now = now.Add(9 * time.Second)
	get(1)
	if inner.calls[1] != 1 {
		t.Fatalf("within the TTL: %d loads of key 1, want 1", inner.calls[1])
	}
	now = now.Add(time.Second)
	get(1) // loaded again at 10 s
	if inner.calls[1] != 2 {
		t.Fatalf("after the TTL: %d loads of key 1, want 2", inner.calls[1])
	}
	get(2)
	get(3) // evicts key 1, the oldest
	get(2)
	get(1)
	if inner.calls[2] != 1 || inner.calls[1] != 3 {
		t.Fatalf("eviction: loads %v", inner.calls)
	}
	get(-1)
	get(-1)
	if inner.calls[-1] != 2 {
		t.Fatalf("missing keys are not cached with caching-missing-key false: %d loads", inner.calls[-1])
	}
	if connector.CachedLookup(inner, 0, time.Second, true, clock) != connector.LookupClient(inner) {
		t.Fatal("max-rows 0 must not cache")
	}
}
