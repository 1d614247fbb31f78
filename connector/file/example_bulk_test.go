package file_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
)

// countedLines is a toy bulk format: it writes its records only at
// Finish, after a header with their count, as a columnar format writes
// its footer last.
type countedLines struct {
	w    io.Writer
	recs []string
}

func (c *countedLines) Write(s string) error { c.recs = append(c.recs, s); return nil }

func (c *countedLines) Finish() error {
	_, err := fmt.Fprintf(c.w, "%d records\n%s\n", len(c.recs), strings.Join(c.recs, "\n"))
	return err
}

// Write words exactly once to a directory partitioned by their first
// letter, in a bulk format, marking each partition with a _SUCCESS file.
func ExampleBulk() {
	dir, err := os.MkdirTemp("", "weir-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	job := weir.NewJob("words")
	words := weir.FromSource(job, "in", weir.SliceSource([]string{"apple", "avocado", "banana"}), weir.NoWatermarks[string]())
	weir.To(words, file.ExactlyOnce[string](dir,
		file.Bulk(file.BulkFactory[string](func(w io.Writer, _ string) (file.BulkWriter[string], error) {
			return &countedLines{w: w}, nil
		})),
		file.Suffix(".txt"),
		file.PartitionBy(func(s string) (string, error) { return "letter=" + s[:1], nil }),
		file.PartitionCommit("_SUCCESS", 0, nil)))
	if err := job.Run(context.Background()); err != nil {
		panic(err)
	}

	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		data, _ := os.ReadFile(path)
		fmt.Printf("%s: %q\n", filepath.ToSlash(rel), data)
		return nil
	})
	// Output:
	// letter=a/_SUCCESS: ""
	// letter=a/part-0000000000-0000-0000.txt: "2 records\napple\navocado\n"
	// letter=b/_SUCCESS: ""
	// letter=b/part-0000000000-0000-0001.txt: "1 records\nbanana\n"
}
