package filesystem_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
)

// The row formats are partitioned as Parquet is: the partition columns in
// the directory names only, read back from them.
func TestRowFormatPartitions(t *testing.T) {
	for _, f := range []string{"json", "csv"} {
		t.Run(f, func(t *testing.T) {
			dir := t.TempDir()
			want := pqInput(t, filepath.Join(dir, "in"), 2, 300)
			out := filepath.Join(dir, "out")
			opts := map[string]string{"connector": "filesystem", "path": out, "format": f,
				"sink.partition-commit.policy.kind": "success-file", "sink.partition-commit.success-file.name": "_DONE"}
			job := weir.NewJob("copy", weir.Parallelism(2))
			copyJob(t, job, &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "in"), "format": "json"}},
				&connector.Table{Name: "out", Schema: pqSchema, Options: opts, PartitionKeys: []int{2, 3}})
			if err := job.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			part := filepath.Join(out, "day=2026-12-02", "hour=1")
			if _, err := os.Stat(filepath.Join(part, "_DONE")); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(part)
			if err != nil {
				t.Fatal(err)
			}
			var line string
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "part-") {
					data, err := os.ReadFile(filepath.Join(part, e.Name()))
					if err != nil {
						t.Fatal(err)
					}
					line, _, _ = strings.Cut(string(data), "\n")
				}
			}
			if strings.Contains(line, "2026-12-02") || line == "" {
				t.Fatalf("a record of %s holds the partition's value, or none was found: %q", part, line)
			}
			got, err := readTable(t, opts, 2, 3)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%d rows read back, want %d (first %q, want %q)", len(got), len(want), got[:min(3, len(got))], want[:3])
			}
		})
	}
}

// The partition-time trigger through the connector: the sink's writers
// are told the watermark (the end of the input here) and every partition
// is committed, its time read from the directory by the pattern.
func TestPartitionTimeTrigger(t *testing.T) {
	dir := t.TempDir()
	pqInput(t, filepath.Join(dir, "in"), 2, 300)
	out := filepath.Join(dir, "out")
	opts := map[string]string{"connector": "filesystem", "path": out, "format": "parquet",
		"sink.partition-commit.policy.kind": "success-file", "sink.partition-commit.trigger": "partition-time",
		"partition.time-extractor.timestamp-pattern": "$day $hour:00:00", "sink.partition-commit.delay": "1 h"}
	job := weir.NewJob("copy", weir.Parallelism(2))
	copyJob(t, job, &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "in"), "format": "json"}},
		&connector.Table{Name: "out", Schema: pqSchema, Options: opts, PartitionKeys: []int{2, 3}})
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, day := range []string{"2026-12-01", "2026-12-02", "2026-12-03"} {
		for _, h := range []string{"0", "1"} {
			if _, err := os.Stat(filepath.Join(out, "day="+day, "hour="+h, "_SUCCESS")); err != nil {
				t.Errorf("partition %s/%s: %v", day, h, err)
			}
		}
	}
}
