package jdbc_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

func lookupKeys(t *testing.T, c connector.LookupClient, keys ...int64) []string {
	t.Helper()
	var out []string
	for _, k := range keys {
		rows, err := c.Lookup(context.Background(), []types.Value{types.IntValue(k)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, r.Values[1].S)
		}
		if len(rows) == 0 {
			out = append(out, "-")
		}
	}
	return out
}

// The lookup client queries PostgreSQL per key; with 'lookup.cache.max-rows'
// a key's rows are kept for 'lookup.cache.ttl', so a change of the table
// is not seen until then (as in Flink), and without a cache it is.
func TestLookup(t *testing.T) {
	u := jdbcURL(t)
	exec(t, `CREATE TABLE lk (id bigint PRIMARY KEY, name text); INSERT INTO lk VALUES (1, 'a'), (2, 'b')`)
	s := types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "name", Type: types.StringType}}
	open := func(opts map[string]string) connector.LookupClient {
		o := map[string]string{"connector": "jdbc", "url": u, "table-name": "lk", "username": "weir"}
		for k, v := range opts {
			o[k] = v
		}
		ls, err := connector.CreateLookup(&connector.Table{Name: "lk", Schema: s, Options: o}, []int{0})
		if err != nil {
			t.Fatal(err)
		}
		c, err := ls.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	plain := open(nil)
	cached := open(map[string]string{"lookup.cache.max-rows": "10", "lookup.cache.ttl": "1 h"})
	if got := lookupKeys(t, plain, 1, 2, 3); !slices.Equal(got, []string{"a", "b", "-"}) {
		t.Fatalf("lookups: %q", got)
	}
	if got := lookupKeys(t, cached, 1, 3); !slices.Equal(got, []string{"a", "-"}) {
		t.Fatalf("cached lookups: %q", got)
	}
	exec(t, `UPDATE lk SET name = 'A' WHERE id = 1; INSERT INTO lk VALUES (3, 'c')`)
	if got := lookupKeys(t, plain, 1, 3); !slices.Equal(got, []string{"A", "c"}) {
		t.Fatalf("lookups after the change: %q", got)
	}
	if got := lookupKeys(t, cached, 1, 3, 2); !slices.Equal(got, []string{"a", "-", "b"}) {
		t.Fatalf("cached lookups after the change: %q", got)
	}
	if _, err := connector.CreateLookup(&connector.Table{Name: "lk", Schema: s, Options: map[string]string{
		"connector": "jdbc", "url": u, "table-name": "lk", "lookup.cache.ttl": "soon"}}, []int{0}); err == nil ||
		!strings.Contains(err.Error(), "lookup.cache.ttl") {
		t.Fatalf("a bad ttl: %v", err)
	}
}

// A SQL lookup join against a PostgreSQL table: inner and LEFT.
func TestLookupJoinSQL(t *testing.T) {
	u := jdbcURL(t)
	exec(t, `CREATE TABLE cust (id bigint PRIMARY KEY, name text, country text);
		INSERT INTO cust VALUES (10, 'ann', 'DE'), (20, 'bob', 'FR')`)
	// two SELECTs print from their own sink tasks
	var out weirtest.LockedBuffer
	err := sql.Run(context.Background(), `
CREATE TABLE orders (id INT, cid BIGINT, pt AS PROCTIME()) WITH ('connector' = 'datagen', 'number-of-rows' = '4',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '4',
  'fields.cid.kind' = 'sequence', 'fields.cid.start' = '0', 'fields.cid.end' = '30');
CREATE TABLE cust (id BIGINT, name STRING, country STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = '`+u+`', 'table-name' = 'cust', 'username' = 'weir', 'lookup.cache.max-rows' = '100');
SELECT o.id, c.name FROM orders AS o JOIN cust FOR SYSTEM_TIME AS OF o.pt AS c ON o.cid * 10 = c.id;
SELECT o.id, c.name FROM orders AS o LEFT JOIN cust FOR SYSTEM_TIME AS OF o.pt AS c ON o.cid * 10 = c.id AND c.country = 'DE';
`, sql.Stdout(&out))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "+I[") {
			got = append(got, l)
		}
	}
	sort.Strings(got)
	want := []string{"+I[1, NULL]", "+I[2, ann]", "+I[2, ann]", "+I[3, NULL]", "+I[3, bob]", "+I[4, NULL]"}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%q", out.String(), want)
	}
}
