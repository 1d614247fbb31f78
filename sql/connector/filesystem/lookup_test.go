package filesystem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

func lookupTable(opts map[string]string) *connector.Table {
	return &connector.Table{Name: "side", Options: opts, Schema: types.Schema{
		{Name: "id", Type: types.BigIntType}, {Name: "name", Type: types.StringType}, {Name: "ts", Type: types.Timestamp3}}}
}

func writeLookupFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lookupNames returns the names of the rows found for key in c.
func lookupNames(t *testing.T, c connector.LookupClient, key types.Value) string {
	t.Helper()
	rows, err := c.Lookup(context.Background(), []types.Value{key})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Values[1].S)
	}
	return strings.Join(names, ",")
}

// TestLookupLoadsTheTableAndReloadsAfterTTL: a filesystem table's lookup
// client reads every file of the table at its first lookup (a key's rows
// in file order, NULL keys left out) and answers from memory until
// 'lookup.join.cache.ttl' has passed, then reads the files again, as
// Flink's FileSystemLookupFunction; by the id (an integer key) and by the
// name (a string key).
func TestLookupLoadsTheTableAndReloadsAfterTTL(t *testing.T) {
	dir := t.TempDir()
	writeLookupFile(t, filepath.Join(dir, "a.csv"), "1,one,2024-01-01 00:00:00\n2,two,2024-01-01 00:00:00\n")
	writeLookupFile(t, filepath.Join(dir, "b.csv"), "2,deux,2024-01-01 00:00:00\n,nobody,2024-01-01 00:00:00\n")
	tb := lookupTable(map[string]string{"connector": "filesystem", "path": dir, "format": "csv", "lookup.join.cache.ttl": "10 min"})
	for _, keyCol := range []int{0, 1} {
		ls, err := Factory{}.CreateLookup(tb, []int{keyCol})
		if err != nil {
			t.Fatal(err)
		}
		c, err := ls.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// the TTL's timer, fired by the test
		var fire func()
		var after time.Duration
		c.(*fsLookup).afterFunc = func(d time.Duration, f func()) func() bool {
			after, fire = d, f
			return func() bool { return true }
		}
		key := func(id int64, name string) types.Value {
			if keyCol == 0 {
				return types.Value{I: id}
			}
			return types.Value{S: name}
		}
		if got := lookupNames(t, c, key(2, "two")); keyCol == 0 && got != "two,deux" || keyCol == 1 && got != "two" {
			t.Fatalf("key column %d: key 2 finds %q", keyCol, got)
		}
		if got := lookupNames(t, c, key(3, "three")); got != "" {
			t.Fatalf("key column %d: a missing key finds %q", keyCol, got)
		}
		if after != 10*time.Minute {
			t.Fatalf("key column %d: the TTL timer is set to %s, want 10m", keyCol, after)
		}
		writeLookupFile(t, filepath.Join(dir, "c.csv"), "3,three,2024-01-01 00:00:00\n")
		if got := lookupNames(t, c, key(3, "three")); got != "" {
			t.Fatalf("key column %d: a row added before the TTL passed is found (%q): want the table as loaded", keyCol, got)
		}
		fire()
		if got := lookupNames(t, c, key(3, "three")); got != "three" {
			t.Fatalf("key column %d: after the TTL the added row is not found (%q): want the table read again", keyCol, got)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		writeLookupFile(t, filepath.Join(dir, "c.csv"), "")
	}
}

// TestLookupBadRecord: a record of the table that does not decode fails
// the lookup with its file and line (file:line), as it fails a scan; an option of the
// lookup out of range is refused when the join is planned.
func TestLookupBadRecord(t *testing.T) {
	dir := t.TempDir()
	writeLookupFile(t, filepath.Join(dir, "a.csv"), "1,one,2024-01-01 00:00:00\nx,two,2024-01-01 00:00:00\n")
	ls, err := Factory{}.CreateLookup(lookupTable(map[string]string{"connector": "filesystem", "path": dir, "format": "csv"}), []int{0})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ls.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Lookup(context.Background(), []types.Value{{I: 1}})
	var re *file.RecordError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "a.csv") || !strings.Contains(err.Error(), "a.csv:2") {
		t.Fatalf("lookup over a malformed record: %v, want a *file.RecordError naming a.csv:2", err)
	}
	if _, err := (Factory{}).CreateLookup(lookupTable(map[string]string{"connector": "filesystem", "path": dir, "format": "csv", "lookup.join.cache.ttl": "0 s"}), []int{0}); err == nil || !strings.Contains(err.Error(), "lookup.join.cache.ttl") {
		t.Fatalf("a TTL of 0: %v, want it refused", err)
	}
}
