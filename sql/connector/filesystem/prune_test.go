package filesystem_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

// writeParquet copies rows (JSON Lines files in dir/json, made by
// pqInput) into a Parquet table at dir/name, optionally partitioned,
// with small row groups.
func writeParquet(t *testing.T, dir, json, name string, partitionKeys ...int) string {
	t.Helper()
	out := filepath.Join(dir, name)
	job := weir.NewJob("copy")
	copyJob(t, job, &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, json), "format": "json"}},
		&connector.Table{Name: "out", Schema: pqSchema, PartitionKeys: partitionKeys,
			Options: map[string]string{"connector": "filesystem", "path": out, "format": "parquet", "parquet.block.size": "1kb"}})
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// spoil overwrites a Parquet file's pages with garbage, keeping its
// footer: the footer (and so the statistics) still read, the rows do not.
func spoil(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	footer := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	for i := 4; i < len(b)-8-footer; i++ {
		b[i] = 0xff
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func partFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "part-") {
			files = append(files, p)
		}
		return err
	})
	slices.Sort(files)
	return files
}

func intCompare(a, b types.Value) int { return int(a.I - b.I) }

// A query's filter prunes Parquet row groups by their statistics and
// files by their partition directories: the row groups and files it
// excludes are not read at all (spoiled here, they would fail the job),
// and the rows are those of the filter.
func TestParquetFilterPushDown(t *testing.T) {
	dir := t.TempDir()
	all := pqInput(t, filepath.Join(dir, "json"), 2, 2000) // ids 0..1999 and 100000..101999
	part := writeParquet(t, dir, "json", "part", 2, 3)
	// the flat table: a file of ids below 100000, another of those above
	if err := os.MkdirAll(filepath.Join(dir, "json2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "json", "f1.jsonl"), filepath.Join(dir, "json2", "f1.jsonl")); err != nil {
		t.Fatal(err)
	}
	flat := writeParquet(t, dir, "json", "flat")
	low := partFiles(t, flat)
	for _, f := range partFiles(t, writeParquet(t, dir, "json2", "flat2")) {
		if err := os.Rename(f, filepath.Join(flat, "high-"+filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}

	// Prune itself: a predicate on id keeps a few of the row groups
	src, err := connector.CreateSource(&connector.Table{Name: "flat", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": flat, "format": "parquet"}})
	if err != nil {
		t.Fatal(err)
	}
	full, err := src.Source.Splits(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gt := []connector.Predicate{{Col: 0, Op: ">", Value: types.IntValue(101900), Compare: intCompare}}
	pruned, err := src.Prune(src.Source, [][]connector.Predicate{gt}).Splits(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(full) < 10 || len(pruned) == 0 || len(pruned)*5 > len(full) {
		t.Fatalf("%d splits pruned to %d, want a few", len(full), len(pruned))
	}
	lt := []connector.Predicate{{Col: 0, Op: "<", Value: types.IntValue(0), Compare: intCompare}}
	if both, _ := src.Prune(src.Source, [][]connector.Predicate{gt, lt}).Splits(context.Background()); len(both) != len(pruned) {
		t.Fatalf("two readers: %d splits, want %d (those of the first)", len(both), len(pruned))
	}

	// through the planner: spoil every file whose ids are all below
	// 100000, and every file of day 2026-12-01
	for _, f := range low {
		spoil(t, f)
	}
	for _, f := range partFiles(t, part) {
		if strings.Contains(f, "day=2026-12-01") {
			spoil(t, f)
		}
	}
	query := func(table, where string) ([]string, error) {
		out := filepath.Join(dir, "out-"+table+fmt.Sprint(len(where)))
		script := fmt.Sprintf(`
CREATE TABLE t (id BIGINT, name STRING, day STRING, hour INT) %s WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet');
CREATE TABLE o (id BIGINT, name STRING, day STRING, hour INT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
INSERT INTO o SELECT * FROM t WHERE %s;`, map[string]string{"flat": "", "part": "PARTITIONED BY (day, hour)"}[table], filepath.Join(dir, table), out, where)
		if err := sql.Run(context.Background(), script); err != nil {
			return nil, err
		}
		return committed(t, out), nil
	}
	want := func(keep func(id int64, day string) bool) []string {
		var w []string
		for _, r := range all {
			var id int64
			var name, day string
			var hour int
			fmt.Sscanf(strings.ReplaceAll(r, ",", " "), "%d %s %s %d", &id, &name, &day, &hour)
			if keep(id, day) {
				w = append(w, r)
			}
		}
		return w
	}
	for _, c := range []struct {
		table, where string
		keep         func(int64, string) bool
	}{
		{"flat", "id >= 100000", func(id int64, _ string) bool { return id >= 100000 }},
		{"flat", "100500 > id AND id > 100400 AND name <> 'x'", func(id int64, _ string) bool { return id > 100400 && id < 100500 }},
		{"flat", "id BETWEEN 101000 AND 101010", func(id int64, _ string) bool { return id >= 101000 && id <= 101010 }},
		{"part", "day = '2026-12-02'", func(_ int64, day string) bool { return day == "2026-12-02" }},
		{"part", "day > '2026-12-01' AND id < 50", func(id int64, day string) bool { return day > "2026-12-01" && id < 50 }},
	} {
		got, err := query(c.table, c.where)
		if err != nil {
			t.Fatalf("%s WHERE %s: %v", c.table, c.where, err)
		}
		if w := want(c.keep); !slices.Equal(got, w) {
			t.Fatalf("%s WHERE %s: %d rows, want %d", c.table, c.where, len(got), len(w))
		}
	}
	// a filter that prunes nothing reads the spoiled files: the job fails
	// (which shows they are spoiled, and that an OR does not prune)
	if _, err := query("flat", "id >= 100000 OR id = 5"); err == nil {
		t.Fatal("reading spoiled files did not fail")
	}
}
