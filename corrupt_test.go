package weir_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// checkpointsOf runs a bounded checkpointed job into dir and returns its
// retained checkpoint directories, oldest first. The source's reader asks
// for a checkpoint after every 3,000 of its 20,000 records (weirtest), so
// six complete however slow the machine; periodic checkpoints,
// which a loaded machine could leave at two before the input ends
// ("want 3 retained checkpoints, have 2" at load 14), are off.
func checkpointsOf(t *testing.T, dir string, sink *memSink) []string {
	t.Helper()
	var job *weir.Job
	gen := weir.GeneratorSource(weir.GeneratorConfig{Count: 20000, Seed: 3}, genEvents)
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, gen.(weir.RestorableSource[ev]), 3000)
	job = windowJobFrom(weir.Tumbling(time.Second), paced, 2, dir, sink,
		weir.Checkpointing(time.Hour, dir), weirtest.FirstCheckpointAfter(time.Hour))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "chk-*"))
	sort.Strings(m)
	if len(m) < 3 {
		t.Fatalf("want 3 retained checkpoints, have %d", len(m))
	}
	return m
}

// flipStateFile flips a bit in the middle of a state file of checkpoint ck.
func flipStateFile(t *testing.T, ck string) {
	t.Helper()
	f := stateFile(t, ck)
	b, _ := os.ReadFile(f)
	b[len(b)/2] ^= 0x10
	os.WriteFile(f, b, 0o644)
}

func stateFile(t *testing.T, ck string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(ck, "*.state"))
	if len(m) == 0 {
		t.Fatalf("no state file in %s", ck)
	}
	sort.Strings(m)
	return m[len(m)-1]
}

// A job started on a directory whose newest checkpoint is damaged would
// replay output its sink already committed if it restored the previous
// one: it refuses to start, naming the checkpoints and the choices; with
// AllowDuplicateOutput it restores the previous one. A damaged _metadata is
// repaired from its copy instead: no fallback.
func TestCorruptCheckpointFallsBack(t *testing.T) {
	corruptions := map[string]func(t *testing.T, ck string){
		"bit flip": flipStateFile,
		"truncation": func(t *testing.T, ck string) {
			f := stateFile(t, ck)
			st, _ := os.Stat(f)
			os.Truncate(f, st.Size()/2)
		},
		"missing file": func(t *testing.T, ck string) { os.Remove(stateFile(t, ck)) },
		"missing metadata": func(t *testing.T, ck string) {
			os.Remove(filepath.Join(ck, "_metadata"))
			os.Remove(filepath.Join(ck, "_metadata.copy"))
		},
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			sink := newMemSink()
			cks := checkpointsOf(t, dir, sink)
			newest, previous := cks[len(cks)-1], cks[len(cks)-2]
			corrupt(t, newest)
			before := sink.output()
			err := windowJob(20000, 0, 2, dir, sink).Run(context.Background())
			if !errors.Is(err, weir.ErrDuplicateOutput) {
				t.Fatalf("restore after %s of the newest checkpoint: %v, want ErrDuplicateOutput", name, err)
			}
			for _, want := range []string{previous, newest, "AllowDuplicateOutput", "savepoint"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("the error does not name %q: %v", want, err)
				}
			}
			if fmt.Sprint(sink.output()) != fmt.Sprint(before) {
				t.Fatal("the refused start committed output")
			}
			job := windowJob(20000, 0, 2, dir, sink, weir.AllowDuplicateOutput())
			if err := job.Run(context.Background()); err != nil {
				t.Fatalf("AllowDuplicateOutput: %v", err)
			}
			if got := job.RestoredFrom(); got != previous {
				t.Fatalf("restored %q, want the previous checkpoint %q", got, previous)
			}
		})
	}
	// One bad copy of the metadata: repaired, the newest is restored.
	t.Run("damaged metadata", func(t *testing.T) {
		dir := t.TempDir()
		sink := newMemSink()
		cks := checkpointsOf(t, dir, sink)
		newest := cks[len(cks)-1]
		b, _ := os.ReadFile(filepath.Join(newest, "_metadata"))
		b[len(b)/3] ^= 0x01
		os.WriteFile(filepath.Join(newest, "_metadata"), b, 0o644)
		job := windowJob(20000, 0, 2, dir, sink)
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := job.RestoredFrom(); got != newest {
			t.Fatalf("restored %q, want the newest checkpoint %q (its metadata repaired)", got, newest)
		}
	})
	t.Run("all corrupt", func(t *testing.T) {
		dir := t.TempDir()
		sink := newMemSink()
		for _, ck := range checkpointsOf(t, dir, sink) {
			corruptions["bit flip"](t, ck)
		}
		err := windowJob(20000, 0, 2, dir, sink).Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "refusing to start") {
			t.Fatalf("with every checkpoint corrupt the job must refuse to start, got %v", err)
		}
		// Unless told to start fresh.
		err = windowJob(20000, 0, 2, dir, sink, weir.StartFresh()).Run(context.Background())
		if !errors.Is(err, weir.ErrDuplicateOutput) || !strings.Contains(err.Error(), "start empty") {
			t.Fatalf("StartFresh after committed output: %v, want ErrDuplicateOutput", err)
		}
		job := windowJob(20000, 0, 2, dir, sink, weir.StartFresh(), weir.AllowDuplicateOutput(), weir.RetainCheckpoints(3), weir.CheckpointTimeout(time.Minute))
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("StartFresh: %v", err)
		}
		if job.RestoredFrom() != "" {
			t.Fatalf("StartFresh restored %s", job.RestoredFrom())
		}
	})
}
