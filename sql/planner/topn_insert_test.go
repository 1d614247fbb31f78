package planner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestTopNInsertOnlyModel: an insert-only ROW_NUMBER Top-N (ranks moved
// in the state's own list, topNFn.insertRowNumber) over random rows with
// ties leaves, once its changelog is applied, the top N of each partition
// by the ORDER BY, earlier rows first among ties, each with its rank; and
// the changelog never deletes a row it did not insert.
func TestTopNInsertOnlyModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	type row struct{ id, k, v int }
	var rows []row
	var data []string
	for id := 0; id < 3000; id++ {
		x := row{id, r.IntN(20), r.IntN(40)}
		rows = append(rows, x)
		data = append(data, fmt.Sprintf("+I %d, %d, %d", x.id, x.k, x.v))
	}
	values.mu.Lock()
	values.data["topn-model"] = data
	values.mu.Unlock()
	for _, n := range []int{1, 3, 10} {
		s := NewSession(Parallelism(1))
		if _, err := s.Exec(`CREATE TABLE tm (id INT, k INT, v INT) WITH ('connector' = 'values', 'data-id' = 'topn-model');`); err != nil {
			t.Fatal(err)
		}
		out, _, _ := runQuery(t, s, fmt.Sprintf(`SELECT k, id, v, rn FROM (SELECT k, id, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM tm) WHERE rn <= %d`, n), true)
		table := map[string]int{}
		for _, c := range out {
			switch c[:2] {
			case "+I":
				table[c[2:]]++
			case "-D":
				if table[c[2:]] == 0 {
					t.Fatalf("N=%d: %s deletes a row not in the table", n, c)
				}
				table[c[2:]]--
			default:
				t.Fatalf("N=%d: unexpected change %s", n, c)
			}
		}
		var got []string
		for k, c := range table {
			for ; c > 0; c-- {
				got = append(got, k)
			}
		}
		byK := map[int][]row{}
		for _, x := range rows {
			byK[x.k] = append(byK[x.k], x)
		}
		var want []string
		for k, xs := range byK {
			sort.SliceStable(xs, func(i, j int) bool { return xs[i].v > xs[j].v })
			for i := 0; i < n && i < len(xs); i++ {
				want = append(want, fmt.Sprintf("[%d, %d, %d, %d]", k, xs[i].id, xs[i].v, i+1))
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("N=%d: table\n%s\nwant\n%s", n, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
