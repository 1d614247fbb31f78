package checkpoint_test

import (
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/weirstream/weir/internal/checkpoint"
)

// A checkpoint is written file by file, committed with its metadata, and
// found again by Latest after a restart.
func Example() {
	dir, _ := os.MkdirTemp("", "checkpoints")
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	store, err := checkpoint.Open(dir, checkpoint.Retain(2), checkpoint.WithLogger(quiet))
	if err != nil {
		log.Fatal(err)
	}
	id, _ := store.NextID()
	p, err := store.Begin(id, checkpoint.KindCheckpoint)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Abort() // does nothing once committed

	// One keyed operator with one subtask holding all 128 key groups.
	w, err := p.Create("counts.0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(w, "alice=3\nbob=5\n")
	file, err := w.Close()
	if err != nil {
		log.Fatal(err)
	}
	file.Subtask, file.KeyGroups = 0, &checkpoint.KeyGroupRange{Start: 0, End: 128}
	_, err = p.Commit(checkpoint.Metadata{
		Job:            "counts",
		MaxParallelism: 128,
		Operators: []checkpoint.OperatorState{
			{UID: "count", Name: "Count", Parallelism: 1, Files: []checkpoint.FileInfo{file}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	// After a restart:
	store, err = checkpoint.Open(dir, checkpoint.WithLogger(quiet))
	if err != nil {
		log.Fatal(err)
	}
	c, err := store.Latest()
	if err != nil {
		log.Fatal(err)
	}
	state, err := c.ReadFile("counts.0") // checks size and CRC-32C
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(filepath.Base(c.Path()), c.Metadata().Job)
	fmt.Print(string(state))
	// Output:
	// chk-0000000001 counts
	// alice=3
	// bob=5
}
