package pebblestate_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
)

type stores struct {
	v  state.ValueStore[string, state.VoidNamespace, int]
	l  state.ListStore[string, state.VoidNamespace, string]
	m  state.MapStore[string, state.VoidNamespace, int, string]
	tq state.TimerQueue[string, state.VoidNamespace]
}

func open(t *testing.T, dir string, cfg state.Config) (*pebblestate.Backend, *stores) {
	t.Helper()
	be, err := pebblestate.Open(pebblestate.Options{Dir: dir, MemoryBudget: 4 << 20}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var s stores
	var errs [4]error
	s.v, errs[0] = state.NewValueStore[string, state.VoidNamespace, int](be, "v", state.Options{})
	s.l, errs[1] = state.NewListStore[string, state.VoidNamespace, string](be, "l", state.Options{})
	s.m, errs[2] = state.NewMapStore[string, state.VoidNamespace, int, string](be, "m", state.Options{})
	s.tq, errs[3] = state.NewTimerQueue[string, state.VoidNamespace](be, "t")
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return be, &s
}

// A Pebble checkpoint (hard-linked SST files) reopens with its state:
// stores created under the same names see their entries, timers keep
// their order and sequence numbers; a second checkpoint shares the files
// that did not change.
func TestCheckpointReopens(t *testing.T) {
	root := t.TempDir()
	cfg := state.Config{MaxParallelism: 128, KeyGroups: state.KeyGroupRange{Start: 0, End: 128}}
	be, s := open(t, filepath.Join(root, "db"), cfg)
	hash, _ := keygroup.Hasher[string]()
	var v0 state.VoidNamespace
	for i := range 20000 {
		k := fmt.Sprint("k", i%3000)
		s.v.Put(hash(k), k, v0, i)
		s.l.Add(hash(k), k, v0, fmt.Sprint(i))
		s.m.Put(hash(k), k, v0, i%5, fmt.Sprint(i))
		s.tq.Register(hash(k), k, v0, int64(i%100))
	}
	// settle the tree first (its writes in one level): the one small file
	// the second checkpoint flushes then starts no compaction between the
	// two, which could rewrite every file and leave none to share (it did,
	// now and then: "3 SST files, 0 shared")
	if err := be.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := be.DB().Compact(context.Background(), []byte{}, bytes.Repeat([]byte{0xff}, 64), false); err != nil {
		t.Fatal(err)
	}
	ck1 := filepath.Join(root, "ck1")
	if err := be.Checkpoint(ck1); err != nil {
		t.Fatal(err)
	}
	k := "k7"
	s.v.Put(hash(k), k, v0, -1) // after the first checkpoint
	ck2 := filepath.Join(root, "ck2")
	if err := be.Checkpoint(ck2); err != nil {
		t.Fatal(err)
	}
	var want []string
	for {
		tm, ok := s.tq.Pop()
		if !ok {
			break
		}
		want = append(want, fmt.Sprint(tm.Key, "@", tm.TS))
	}
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}

	// Shared files: every SST of the first checkpoint that the second
	// also has is the same file.
	shared := 0
	ssts, _ := filepath.Glob(filepath.Join(ck1, "*.sst"))
	for _, f := range ssts {
		a, _ := os.Stat(f)
		if b, err := os.Stat(filepath.Join(ck2, filepath.Base(f))); err == nil && os.SameFile(a, b) {
			shared++
		}
	}
	t.Logf("checkpoint 1: %d SST files, %d shared with checkpoint 2", len(ssts), shared)
	if len(ssts) == 0 || shared == 0 {
		t.Errorf("no SST file shared between checkpoints (%d in the first)", len(ssts))
	}

	be, s = open(t, ck1, cfg)
	defer be.Close()
	if v, _ := s.v.Get(hash(k), k, v0); v != 18007 {
		t.Errorf("reopened value %d, want 18007 (the last write before the checkpoint)", v)
	}
	if l := s.l.Get(hash(k), k, v0); len(l) != 7 || l[0] != "7" {
		t.Errorf("reopened list %v", l)
	}
	if n := s.m.Len(hash(k), k, v0); n != 1 { // the i of k7 are all 2 mod 5
		t.Errorf("reopened map has %d entries", n)
	}
	if s.tq.Len() != len(want) {
		t.Errorf("reopened timer queue has %d timers, want %d", s.tq.Len(), len(want))
	}
	// New timers come after the old ones of the same time.
	s.tq.Register(hash("new"), "new", v0, 0)
	var got []string
	for {
		tm, ok := s.tq.Pop()
		if !ok {
			break
		}
		got = append(got, fmt.Sprint(tm.Key, "@", tm.TS))
	}
	want = slices.Insert(want, slices.IndexFunc(want, func(s string) bool { return !slices.Contains([]string{"@0"}, s[len(s)-2:]) }), "new@0")
	if !slices.Equal(got, want) {
		t.Errorf("timers after reopening fire in another order: %d vs %d", len(got), len(want))
	}
}

// Copying key groups from two databases into one matches states by name,
// whatever ids each database gave them.
func TestCopyKeyGroupsMergesByName(t *testing.T) {
	root := t.TempDir()
	cfg := state.Config{MaxParallelism: 4, KeyGroups: state.KeyGroupRange{Start: 0, End: 4}}
	hash, _ := keygroup.Hasher[string]()
	var v0 state.VoidNamespace
	var srcs []string
	for i, order := range [][]string{{"a", "b"}, {"b", "a"}} {
		dir := filepath.Join(root, fmt.Sprint("src", i))
		be, err := pebblestate.Open(pebblestate.Options{Dir: dir}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range order {
			s, err := state.NewValueStore[string, state.VoidNamespace, string](be, name, state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for k := range 20 {
				key := fmt.Sprint("k", k)
				if int(hash(key)%4) < 2 == (i == 0) { // src0 has key groups 0-1, src1 2-3
					s.Put(hash(key), key, v0, name+key)
				}
			}
		}
		if err := be.Flush(); err != nil {
			t.Fatal(err)
		}
		be.Close()
		srcs = append(srcs, dir)
	}
	dst, err := pebblestate.OpenKV(filepath.Join(root, "dst"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range srcs {
		src, err := pebblestate.OpenKV(dir, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := state.CopyKeyGroups(dst, src, cfg.KeyGroups); err != nil {
			t.Fatal(err)
		}
		src.Close()
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	be, err := pebblestate.Open(pebblestate.Options{Dir: filepath.Join(root, "dst")}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	for _, name := range []string{"b", "a"} {
		s, err := state.NewValueStore[string, state.VoidNamespace, string](be, name, state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for k := range 20 {
			key := fmt.Sprint("k", k)
			if v, ok := s.Get(hash(key), key, v0); !ok || v != name+key {
				t.Errorf("state %s key %s: %q, %t", name, key, v, ok)
			}
		}
	}
}
