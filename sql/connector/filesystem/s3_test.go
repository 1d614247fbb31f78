package filesystem_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/s3fs"
	"github.com/weirstream/weir/internal/testing/s3test"
	"github.com/weirstream/weir/sql/connector"
)

func objects(t *testing.T) *s3fs.FS {
	t.Helper()
	obj, err := s3fs.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// objectLines returns the lines of the committed part objects below dir,
// sorted.
func objectLines(t *testing.T, dir string) []string {
	t.Helper()
	obj := objects(t)
	objs, err := obj.Walk(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, o := range objs {
		if !strings.HasPrefix(filepath.Base(o.Name), "part-") {
			continue
		}
		data, err := obj.ReadFile(o.Name)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
	}
	slices.Sort(lines)
	return lines
}

// A job reading JSON Lines objects and writing CSV objects, its
// checkpoints in the same bucket, fails and restores: the source resumes
// within its objects (ranged reads), the sink's staged uploads are
// committed once, and no upload is left open.
func TestObjectStorageAcrossARestore(t *testing.T) {
	s3test.Start(t, "lake")
	put := func(t *testing.T, path, content string) {
		if err := objects(t).Put(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	want := exactlyOnceAcrossARestore(t, "s3://lake/in", "s3://lake/out", "s3://lake/ckpt", put)
	if got := objectLines(t, "s3://lake/out"); !slices.Equal(got, want) {
		t.Fatalf("%d rows committed, want %d", len(got), len(want))
	}
	if us, err := objects(t).Uploads("s3://lake/out"); err != nil || len(us) > 0 {
		t.Fatalf("uploads left open: %v, %v", us, err)
	}
	if _, err := connector.CreateSource(table("in", map[string]string{"connector": "filesystem", "path": "s3://lake/nothing", "format": "json"})); err == nil ||
		!strings.Contains(err.Error(), "s3://lake/nothing") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a missing s3:// source: %v", err)
	}
}

// Partitioned tables in every format written to s3:// and read back by
// weir, and by the AWS CLI: it lists every partition's success file and
// copies the table to a local directory that weir reads as the same
// rows.
func TestObjectStoragePartitionedTables(t *testing.T) {
	srv := s3test.Start(t, "lake")
	aws := s3test.AWSCLI(t)
	dir := t.TempDir()
	want := pqInput(t, filepath.Join(dir, "in"), 2, 300)
	for _, f := range []string{"parquet", "json", "csv"} {
		t.Run(f, func(t *testing.T) {
			out := "s3://lake/" + f
			opts := map[string]string{"connector": "filesystem", "path": out, "format": f,
				"sink.partition-commit.policy.kind": "success-file"}
			job := weir.NewJob("copy", weir.Parallelism(2))
			copyJob(t, job, &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "in"), "format": "json"}},
				&connector.Table{Name: "out", Schema: pqSchema, Options: opts, PartitionKeys: []int{2, 3}})
			if err := job.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			got, err := readTable(t, opts, 2, 3)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%d rows read back, want %d (first %q, want %q)", len(got), len(want), got[:min(3, len(got))], want[:3])
			}
			if _, err := objects(t).Head(out + "/day=2026-12-02/hour=1/_SUCCESS"); err != nil {
				t.Fatal(err)
			}
			if aws == "" {
				return
			}
			ls, err := exec.Command(aws, "--endpoint-url", srv.URL, "s3", "ls", "--recursive", out+"/").CombinedOutput()
			if err != nil {
				t.Fatalf("aws s3 ls: %v\n%s", err, ls)
			}
			if n := strings.Count(string(ls), "/_SUCCESS\n"); n != 6 {
				t.Fatalf("aws s3 ls lists %d success files, want 6:\n%s", n, ls)
			}
			local := filepath.Join(dir, f)
			if cp, err := exec.Command(aws, "--endpoint-url", srv.URL, "s3", "cp", "--recursive", out+"/", local).CombinedOutput(); err != nil {
				t.Fatalf("aws s3 cp: %v\n%s", err, cp)
			}
			if _, err := os.Stat(filepath.Join(local, "day=2026-12-02", "hour=1", "_SUCCESS")); err != nil {
				t.Fatal(err)
			}
			lopts := map[string]string{"connector": "filesystem", "path": local, "format": f}
			if got, err := readTable(t, lopts, 2, 3); err != nil || !slices.Equal(got, want) {
				t.Fatalf("the copy the AWS CLI made: %d rows, want %d, %v", len(got), len(want), err)
			}
		})
	}
}
