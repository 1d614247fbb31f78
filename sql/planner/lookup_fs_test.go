package planner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestFilesystemLookupJoinInPlace: a processing-time temporal join with
// a 'filesystem' table is Flink's lookup join: the table is loaded whole
// by each subtask's lookup client and probe rows are looked up where they
// are — no keyed operator (a shuffle by the join key) in the job — with
// the rows of an inner and a LEFT join as Flink gives them (a key with
// two table rows joins twice, a NULL key or a missing one joins nothing).
func TestFilesystemLookupJoinInPlace(t *testing.T) {
	dir := t.TempDir()
	side := filepath.Join(dir, "side.csv")
	if err := os.WriteFile(side, []byte("1,one\n2,two\n2,deux\n,nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	values.mu.Lock()
	values.data["lkfs"] = []string{"+I 1, 'a'", "+I 2, 'b'", "+I 3, 'c'", "+I CAST(NULL AS INT), 'd'"}
	values.mu.Unlock()
	for _, tc := range []struct {
		join string
		want []string
	}{
		{"JOIN", []string{"+I[1, a, one]", "+I[2, b, deux]", "+I[2, b, two]"}},
		{"LEFT JOIN", []string{"+I[1, a, one]", "+I[2, b, deux]", "+I[2, b, two]", "+I[3, c, null]", "+I[null, d, null]"}},
	} {
		var out bytes.Buffer
		s := NewSession(Parallelism(2), Stdout(&out))
		if _, err := s.Exec(`
CREATE TABLE lk_probe (id INT, k STRING, p AS PROCTIME()) WITH ('connector' = 'values', 'data-id' = 'lkfs');
CREATE TABLE lk_side (key INT, v STRING) WITH ('connector' = 'filesystem', 'path' = '` + side + `', 'format' = 'csv');
CREATE TABLE lk_out (id INT, k STRING, v STRING) WITH ('connector' = 'print');`); err != nil {
			t.Fatal(err)
		}
		job, err := s.Plan(`INSERT INTO lk_out SELECT P.id, P.k, S.v FROM lk_probe AS P ` + tc.join + ` lk_side FOR SYSTEM_TIME AS OF P.p AS S ON P.id = S.key`)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := job.Run(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		cancel()
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if i := strings.Index(l, "> "); i >= 0 {
				l = l[i+2:]
			}
			got = append(got, l)
		}
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: rows\n%s\nwant\n%s", tc.join, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
		for _, m := range job.Metrics().Operators {
			if strings.HasPrefix(m.Name, "process") || strings.HasPrefix(m.Name, "keyby") {
				t.Errorf("%s: operator %q in the job: want the lookup done in place, without a keyed operator", tc.join, m.Name)
			}
		}
	}
}
