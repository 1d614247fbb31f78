package incremental

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
)

// withChangelog turns the harness's backend's state changelog on.
func (h *incHarness) withChangelog(interval int64) *incHarness {
	h.t.Helper()
	h.be.changelog, h.be.interval = true, interval
	if err := h.be.openLog(); err != nil {
		h.t.Fatal(err)
	}
	return h
}

// desc reads the Pebble description of the harness's operator in the
// latest checkpoint of the store.
func latestDesc(t *testing.T, store *checkpoint.Store) (*checkpoint.Checkpoint, []Desc) {
	t.Helper()
	c, err := store.Latest()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Descs(c.Path(), "proc", stateFiles(t, c, "proc"))
	if err != nil || len(ds) != 1 {
		t.Fatalf("descriptors %+v, %v", ds, err)
	}
	return c, ds
}

// checkRestore restores checkpoint c with the same key groups (its files)
// and into two backends of half the key groups (copying entries), and
// compares every value with version (a key missing from it: deleted).
func checkRestore(t *testing.T, c *checkpoint.Checkpoint, ds []Desc, h *incHarness, keys int, version map[int]int) {
	t.Helper()
	for _, kr := range []state.KeyGroupRange{{Start: 0, End: 128}, {Start: 0, End: 64}, {Start: 64, End: 128}} {
		root := t.TempDir()
		same, err := restorePebble(c, ds, kr, root, filepath.Join(root, "db"))
		if err != nil {
			t.Fatal(err)
		}
		if (same != nil) != (kr.Len() == 128) {
			t.Errorf("%v: restored from the files: %t", kr, same != nil)
		}
		pb, err := pebblestate.Open(pebblestate.Options{Dir: filepath.Join(root, "db")}, state.Config{MaxParallelism: 128, KeyGroups: kr})
		if err != nil {
			t.Fatal(err)
		}
		val, err := state.NewValueStore[string, state.VoidNamespace, []byte](pb, "blob", state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for kg := kr.Start; kg < kr.End; kg++ {
			for e := range val.Entries(kg) {
				i := 0
				fmt.Sscanf(e.Key, "key-%d", &i)
				if v, ok := version[i]; !ok {
					t.Fatalf("%v: %s was deleted but is restored", kr, e.Key)
				} else if !bytes.Equal(e.Value, blobValue(e.Key, v)) {
					t.Fatalf("%v: %s is restored at another version than %d", kr, e.Key, v)
				}
				n++
			}
		}
		want := 0
		for i := range keys {
			if _, ok := version[i]; ok && kr.Contains(int(h.hash(fmt.Sprintf("key-%06d", i))%128)) {
				want++
			}
		}
		if n != want {
			t.Errorf("%v: restored %d keys, want %d", kr, n, want)
		}
		pb.Close()
	}
}

// With the state changelog, a checkpoint after 1% of the keys changed,
// spread over all of them, writes about 1% of the state: the log segment
// of the changes, with the base's files and the earlier segments listed
// again. A restore (at the same key groups, or split in two) replays the
// segments over the base, deletions included. Once the log passes half of
// the base, a checkpoint materializes a new base, and the segments it
// covers are dropped.
func TestChangelogCheckpoints(t *testing.T) {
	const keys = 3000 // 3 MB of values
	dir := filepath.Join(t.TempDir(), "ck")
	store, err := checkpoint.Open(dir, checkpoint.Retain(2), checkpoint.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	h := newIncHarness(t, store, state.KeyGroupRange{Start: 0, End: 128}).withChangelog(0)
	version := map[int]int{}
	for i := range keys {
		h.put(i, 0)
		version[i] = 0
	}
	m1 := h.checkpoint(1)
	if _, ds := latestDesc(t, store); len(ds[0].Log) != 0 || len(ds[0].Files) == 0 {
		t.Fatalf("first checkpoint: %d files, %d log segments; want a materialization", len(ds[0].Files), len(ds[0].Log))
	}
	t.Logf("checkpoint 1: wrote %d of %d bytes", m1.WrittenSize(), m1.TotalSize())
	for round := 2; round <= 6; round++ {
		// 1% of the keys, spread over all of them; a deletion
		for j := range keys / 100 {
			i := (j*7919 + round*13) % keys
			h.put(i, round)
			version[i] = round
		}
		k := fmt.Sprintf("key-%06d", round*101)
		h.val.Delete(h.hash(k), k, state.VoidNamespace{})
		delete(version, round*101)
		// Pebble's own flushes and compactions, as a busy job has them:
		// without the changelog, the checkpoint would upload their output
		if err := h.be.DB().Flush(); err != nil {
			t.Fatal(err)
		}
		if err := h.be.DB().Compact(t.Context(), []byte{0}, []byte{0xff, 0xff, 0xff}, true); err != nil {
			t.Fatal(err)
		}
		m := h.checkpoint(int64(round))
		t.Logf("checkpoint %d: wrote %d of %d bytes", round, m.WrittenSize(), m.TotalSize())
		if m.WrittenSize() > m.TotalSize()/20 {
			t.Fatalf("checkpoint %d after 1%% of the keys changed wrote %d bytes of %d: more than 5%%", round, m.WrittenSize(), m.TotalSize())
		}
		c, ds := latestDesc(t, store)
		if len(ds[0].Log) != round-1 {
			t.Fatalf("checkpoint %d lists %d log segments, want %d", round, len(ds[0].Log), round-1)
		}
		if round == 2 || round == 6 {
			checkRestore(t, c, ds, h, keys, version)
		}
	}

	// Rewrite 60% of the keys: the log passes half of the base, so a new
	// base is taken at this barrier and uploaded a few files at a time by
	// the checkpoints after it, each a log checkpoint over the old base,
	// until all its files are up; the next barrier makes it the base.
	for i := range keys * 6 / 10 {
		h.put(i, 7)
		version[i] = 7
	}
	h.checkpoint(7)
	c, ds := latestDesc(t, store)
	if len(ds[0].Log) != 6 {
		t.Fatalf("checkpoint 7, after 60%% of the keys changed: %d log segments, want 6 over the old base", len(ds[0].Log))
	}
	h.be.mu.Lock()
	started := h.be.mu.next != nil
	h.be.mu.Unlock()
	if !started {
		t.Fatal("checkpoint 7: no next base started")
	}
	promoted := int64(0)
	for id := int64(8); id <= 40 && promoted == 0; id++ {
		h.put(int(id), int(id))
		version[int(id)] = int(id)
		m := h.checkpoint(id)
		c, ds = latestDesc(t, store)
		t.Logf("checkpoint %d: wrote %d of %d bytes, %d log segments", id, m.WrittenSize(), m.TotalSize(), len(ds[0].Log))
		if len(ds[0].Log) == int(id-7) {
			promoted = id // the base of checkpoint 7, and a segment for each after it
		} else if len(ds[0].Log) != int(id-1) {
			t.Fatalf("checkpoint %d: %d log segments", id, len(ds[0].Log))
		}
		if id == 8 {
			checkRestore(t, c, ds, h, keys, version)
		}
	}
	if promoted == 0 {
		t.Fatal("the base taken at checkpoint 7 was not promoted in 33 checkpoints")
	}
	checkRestore(t, c, ds, h, keys, version)
	h.be.mu.Lock()
	segs := len(h.be.mu.segs)
	h.be.mu.Unlock()
	if want := int(promoted - 7); segs != want {
		t.Errorf("%d log segments kept after the new base, want %d", segs, want)
	}
	if left, _ := filepath.Glob(filepath.Join(h.be.root, "changelog-*")); len(left) != segs+1 {
		t.Errorf("local segment files %v, want %d and the open one", left, segs)
	}
	if left, _ := filepath.Glob(filepath.Join(h.be.snapRoot, "*-base-*")); len(left) != 0 {
		t.Errorf("the next base's local copy is left: %v", left)
	}
	h.put(2, 9)
	version[2] = 9
	h.checkpoint(promoted + 1)
	// retention (2 retained) deleted the segments only the dropped
	// checkpoints listed
	for _, f := range sharedFiles(t, dir) {
		if filepath.Base(f) == "changelog-2" {
			t.Errorf("segment %s outlived the checkpoints that list it", f)
		}
	}
}

// The materialization interval: a checkpoint taken that long after the
// base materializes, however little changed.
func TestChangelogMaterializeInterval(t *testing.T) {
	store, err := checkpoint.Open(filepath.Join(t.TempDir(), "ck"), checkpoint.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	h := newIncHarness(t, store, state.KeyGroupRange{Start: 0, End: 128}).withChangelog(60_000)
	for i := range 100 {
		h.put(i, 0)
	}
	h.now = 1_000
	h.checkpoint(1)
	// log segments listed: checkpoint 3 takes the next base, 4 uploads
	// its files (one at a time, at least), 5 promotes it
	want := map[int64]int{2: 1, 3: 2, 4: 3, 5: 2}
	for _, id := range []int64{2, 3, 4, 5} {
		h.now = map[int64]int64{2: 30_000, 3: 61_000, 4: 62_000, 5: 63_000}[id]
		h.put(int(id), int(id))
		h.checkpoint(id)
		if _, ds := latestDesc(t, store); len(ds[0].Log) != want[id] {
			t.Errorf("checkpoint %d at %d ms: %d log segments, want %d", id, h.now, len(ds[0].Log), want[id])
		}
	}
}

// A corrupt segment fails the restore, naming the file; a savepoint of a
// changelog backend is by key group.
func TestChangelogCorruptSegmentAndSavepoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	store, err := checkpoint.Open(dir, checkpoint.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	h := newIncHarness(t, store, state.KeyGroupRange{Start: 0, End: 128}).withChangelog(0)
	for i := range 200 {
		h.put(i, 0)
	}
	h.checkpoint(1)
	h.put(3, 1)
	h.checkpoint(2)
	c, ds := latestDesc(t, store)
	seg := filepath.Join(dir, "shared", filepath.FromSlash(ds[0].Log[0].Ref))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	_, err = restorePebble(c, ds, state.KeyGroupRange{Start: 0, End: 128}, root, filepath.Join(root, "db"))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(filepath.Base(ds[0].Log[0].Ref))) {
		t.Fatalf("restore with a corrupt segment: %v; want an error naming %s", err, ds[0].Log[0].Ref)
	}

	// a savepoint: a Pebble checkpoint written by key group
	token, err := h.be.Snapshot(3, false, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := store.Begin(3, checkpoint.KindSavepoint)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abort()
	st, _, _, err := WriteLocal(p, codec.StateFile{UID: "proc", Name: "proc", Parallelism: 1, Meta: map[string][]byte{LocalKey: token}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Groups) == 0 || st.Meta[MetaKey] != nil {
		t.Fatalf("savepoint: %d key groups, files %t; want key groups", len(st.Groups), st.Meta[MetaKey] != nil)
	}
}

// A backend restored from a changelog checkpoint with the same key groups
// takes the restored base and segments as its chain: its first checkpoint
// is a log checkpoint (the restored segments listed again, a new one
// uploaded), not a materialization, and restores to the state.
func TestChangelogRestoreKeepsTheChain(t *testing.T) {
	const keys = 2000
	dir := filepath.Join(t.TempDir(), "ck")
	store, err := checkpoint.Open(dir, checkpoint.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	h := newIncHarness(t, store, state.KeyGroupRange{Start: 0, End: 128}).withChangelog(0)
	version := map[int]int{}
	for i := range keys {
		h.put(i, 0)
		version[i] = 0
	}
	h.checkpoint(1)
	for id := int64(2); id <= 3; id++ {
		h.put(int(id), int(id))
		version[int(id)] = int(id)
		h.checkpoint(id)
	}
	c, ds := latestDesc(t, store)
	if len(ds[0].Log) != 2 {
		t.Fatalf("checkpoint 3 lists %d segments, want 2", len(ds[0].Log))
	}
	root := t.TempDir()
	be, err := Open(Options{Dir: filepath.Join(root, "subtask"), UID: "proc", Changelog: true, MemoryBudget: 4 << 20,
		Restore: c, RestoreID: c.ID(), Descs: ds}, state.Config{MaxParallelism: 128, KeyGroups: state.KeyGroupRange{Start: 0, End: 128}})
	if err != nil {
		t.Fatal(err)
	}
	h2 := &incHarness{t: t, be: be, store: store, hash: h.hash}
	t.Cleanup(func() { be.Close() })
	if h2.val, err = state.NewValueStore[string, state.VoidNamespace, []byte](be, "blob", state.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := be.CheckRestored(); err != nil {
		t.Fatal(err)
	}
	h2.put(7, 4)
	version[7] = 4
	m := h2.checkpoint(4)
	c, ds = latestDesc(t, store)
	if len(ds[0].Log) != 3 {
		t.Fatalf("the first checkpoint after the restore lists %d segments, want 3 (a log checkpoint)", len(ds[0].Log))
	}
	if m.WrittenSize() > m.TotalSize()/20 {
		t.Fatalf("the first checkpoint after the restore wrote %d of %d bytes", m.WrittenSize(), m.TotalSize())
	}
	checkRestore(t, c, ds, h, keys, version)
}
