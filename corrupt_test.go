package weir_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// checkpointsOf runs a bounded checkpointed job into dir and returns its
// retained checkpoint directories, oldest first.
func checkpointsOf(t *testing.T, dir string, sink *memSink) []string {
	t.Helper()
	if err := windowJob(20000, 50_000, 2, dir, sink).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "chk-*"))
	sort.Strings(m)
	if len(m) < 3 {
		t.Fatalf("want 3 retained checkpoints, have %d", len(m))
	}
	return m
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

// A job started on a directory whose newest checkpoint is damaged restores
// the previous one; with all damaged it refuses to start.
func TestCorruptCheckpointFallsBack(t *testing.T) {
	corruptions := map[string]func(t *testing.T, ck string){
		"bit flip": func(t *testing.T, ck string) {
			f := stateFile(t, ck)
			b, _ := os.ReadFile(f)
			b[len(b)/2] ^= 0x10
			os.WriteFile(f, b, 0o644)
		},
		"truncation": func(t *testing.T, ck string) {
			f := stateFile(t, ck)
			st, _ := os.Stat(f)
			os.Truncate(f, st.Size()/2)
		},
		"missing file": func(t *testing.T, ck string) { os.Remove(stateFile(t, ck)) },
		"missing metadata": func(t *testing.T, ck string) {
			os.Remove(filepath.Join(ck, "_metadata"))
		},
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			sink := newMemSink()
			cks := checkpointsOf(t, dir, sink)
			newest, previous := cks[len(cks)-1], cks[len(cks)-2]
			corrupt(t, newest)
			job := windowJob(20000, 0, 2, dir, sink)
			if err := job.Run(context.Background()); err != nil {
				t.Fatalf("restore after %s of the newest checkpoint: %v", name, err)
			}
			if got := job.RestoredFrom(); got != previous {
				t.Fatalf("restored %q, want the previous checkpoint %q", got, previous)
			}
		})
	}
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
		job := windowJob(20000, 0, 2, dir, sink, weir.StartFresh(), weir.RetainCheckpoints(3), weir.CheckpointTimeout(time.Minute))
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("StartFresh: %v", err)
		}
		if job.RestoredFrom() != "" {
			t.Fatalf("StartFresh restored %s", job.RestoredFrom())
		}
	})
}
