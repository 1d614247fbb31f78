package incremental

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
)

// incHarness drives one incremental Pebble backend and a checkpoint store
// without a job: what a subtask does at a barrier, and what the
// coordinator does with it.
type incHarness struct {
	t     *testing.T
	be    *Backend
	val   state.ValueStore[string, state.VoidNamespace, []byte]
	store *checkpoint.Store
	hash  func(string) uint64
	now   int64 // the processing time of the barriers, ms
}

func newIncHarness(t *testing.T, store *checkpoint.Store, r state.KeyGroupRange) *incHarness {
	t.Helper()
	root := t.TempDir()
	cfg := state.Config{MaxParallelism: 128, KeyGroups: r}
	pb, err := pebblestate.Open(pebblestate.Options{Dir: filepath.Join(root, "db"), MemoryBudget: 4 << 20}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	be := &Backend{Backend: pb, root: root, snapRoot: root, uid: "proc", incremental: true, instance: newInstanceID()}
	t.Cleanup(func() { be.Close() })
	val, err := state.NewValueStore[string, state.VoidNamespace, []byte](be, "blob", state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := keygroup.Hasher[string]()
	return &incHarness{t: t, be: be, val: val, store: store, hash: hash}
}

func (h *incHarness) put(i, version int) {
	k := fmt.Sprintf("key-%06d", i)
	h.val.Put(h.hash(k), k, state.VoidNamespace{}, blobValue(k, version))
}

// blobValue is 1 KiB that does not compress.
func blobValue(k string, version int) []byte {
	var b bytes.Buffer
	x := uint64(version)*0x9E3779B97F4A7C15 ^ uint64(len(k))
	for _, c := range []byte(k) {
		x = x*31 + uint64(c)
	}
	for b.Len() < 1024 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		fmt.Fprintf(&b, "%016x", x)
	}
	return b.Bytes()[:1024]
}

// checkpoint takes checkpoint id of the backend, as a barrier and the
// coordinator would, and returns its metadata.
func (h *incHarness) checkpoint(id int64) *checkpoint.Metadata {
	h.t.Helper()
	token, err := h.be.Snapshot(id, false, false, h.now)
	if err != nil {
		h.t.Fatal(err)
	}
	p, err := h.store.Begin(id, checkpoint.KindCheckpoint)
	if err != nil {
		h.t.Fatal(err)
	}
	defer p.Abort()
	st := codec.StateFile{UID: "proc", Name: "proc", Parallelism: 1, Meta: map[string][]byte{LocalKey: token}}
	st, files, confirm, err := WriteLocal(p, st, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	data, _ := codec.Marshal(st)
	w, err := p.Create("op000-proc-0.state")
	if err != nil {
		h.t.Fatal(err)
	}
	w.Write(data)
	fi, err := w.Close()
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := p.Commit(checkpoint.Metadata{Job: "t", MaxParallelism: 128, Operators: []checkpoint.OperatorState{
		{UID: "proc", Name: "proc", Parallelism: 1, Files: append(files, fi)}}})
	if err != nil {
		h.t.Fatal(err)
	}
	confirm()
	if left, _ := filepath.Glob(filepath.Join(h.be.snapRoot, "*-snap-*")); len(left) > 0 {
		h.t.Errorf("local snapshot of checkpoint %d left behind: %v", id, left)
	}
	return c.Metadata()
}

// An incremental checkpoint after a small change writes the new SST file
// and the small files, and lists the large SST files of the previous one
// again; a restore from it has the state; retention deletes the shared
// files no retained checkpoint lists; a corrupt shared file makes the
// checkpoint unusable and Latest falls back to the previous one.
func TestPebbleIncrementalCheckpointSizes(t *testing.T) {
	const keys = 3000 // 3 MB of values
	var logs bytes.Buffer
	dir := filepath.Join(t.TempDir(), "ck")
	store, err := checkpoint.Open(dir, checkpoint.Retain(2), checkpoint.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	h := newIncHarness(t, store, state.KeyGroupRange{Start: 0, End: 128})
	for i := range keys {
		h.put(i, 0)
	}
	// One compacted LSM, so that no background compaction rewrites files
	// between the checkpoints below: the sizes are deterministic.
	if err := h.be.DB().Compact(t.Context(), []byte{0}, []byte{0xff, 0xff, 0xff}, true); err != nil {
		t.Fatal(err)
	}
	m1 := h.checkpoint(1)
	if m1.WrittenSize() != m1.TotalSize() || m1.SharedSize() < keys*1024 {
		t.Fatalf("first checkpoint: wrote %d of %d bytes, %d shared; want all, and the %d bytes of values shared",
			m1.WrittenSize(), m1.TotalSize(), m1.SharedSize(), keys*1024)
	}
	for i := range 10 {
		h.put(i*7, 1)
	}
	m2 := h.checkpoint(2)
	t.Logf("checkpoint 1: wrote %d bytes (%d shared); checkpoint 2: wrote %d of %d bytes", m1.WrittenSize(), m1.SharedSize(), m2.WrittenSize(), m2.TotalSize())
	if m2.WrittenSize() > m2.TotalSize()/20 || m2.WrittenSize() > 64<<10 {
		t.Fatalf("checkpoint 2 after 10 changed keys wrote %d bytes of %d: not incremental", m2.WrittenSize(), m2.TotalSize())
	}
	if shared := sharedBytes(t, dir); shared != m1.SharedSize()+sharedOwn(m2) {
		t.Fatalf("shared area holds %d bytes, want %d + %d", shared, m1.SharedSize(), sharedOwn(m2))
	}

	// Restore checkpoint 2 with the same key groups (its files), and into
	// two backends of half the key groups (copying entries).
	c, err := store.Latest()
	if err != nil || c.ID() != 2 {
		t.Fatalf("latest: %v, %v", c, err)
	}
	ds, err := Descs(c.Path(), "proc", stateFiles(t, c, "proc"))
	if err != nil || len(ds) != 1 || len(ds[0].NonEmpty) == 0 {
		t.Fatalf("descriptors %+v, %v", ds, err)
	}
	version := map[int]int{}
	for i := range keys {
		if i%7 == 0 && i/7 < 10 {
			version[i] = 1
		} else {
			version[i] = 0
		}
	}
	checkRestore(t, c, ds, h, keys, version)

	// Retention (2 retained): checkpoint 3 rewrites everything (a full
	// compaction), checkpoint 4 adds a file. Once checkpoint 2 is gone,
	// the files only checkpoints 1 and 2 listed are deleted; those that 3
	// and 4 list stay.
	for i := range 10 {
		h.put(i*11, 2)
	}
	if err := h.be.DB().Compact(t.Context(), []byte{0}, []byte{0xff, 0xff, 0xff}, true); err != nil {
		t.Fatal(err)
	}
	m3 := h.checkpoint(3)
	h.put(5, 3)
	m4 := h.checkpoint(4)
	listed := map[string]bool{}
	for _, m := range []*checkpoint.Metadata{m3, m4} {
		for _, f := range m.Operators[0].Files {
			if f.Shared {
				listed[f.Name] = true
			}
		}
	}
	files := sharedFiles(t, dir)
	for _, f := range files {
		if !listed[f] {
			t.Errorf("shared file %s is listed by no retained checkpoint but was kept", f)
		}
	}
	if len(files) != len(listed) {
		t.Errorf("shared area has %d files, retained checkpoints list %d", len(files), len(listed))
	}
	deleted := 0
	for _, f := range m2.Operators[0].Files {
		if f.Shared && !listed[f.Name] {
			deleted++
		}
	}
	if deleted == 0 {
		t.Errorf("checkpoint 2's files are all still listed: retention was not tested")
	}

	// A bit flip in a shared file that checkpoint 4 uploaded: Latest (as a
	// job reads it) skips checkpoint 4, naming the file, for checkpoint 3.
	var own string
	for _, f := range m4.Operators[0].Files {
		if f.Shared && f.UploadedIn == 4 {
			own = f.Name
		}
	}
	path := filepath.Join(dir, "shared", filepath.FromSlash(own))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	vstore, err := checkpoint.Open(dir, checkpoint.VerifyContents(), checkpoint.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	c, err = vstore.Latest()
	if err != nil || c.ID() != 3 {
		t.Fatalf("latest with a corrupt shared file in checkpoint 4: %v, %v", c, err)
	}
	if !strings.Contains(logs.String(), filepath.Base(own)) || !strings.Contains(logs.String(), "checksum mismatch") {
		t.Errorf("the log does not name the corrupt file %s:\n%s", own, logs.String())
	}
}

func keysIn(hash func(string) uint64, n int, r state.KeyGroupRange) int {
	c := 0
	for i := range n {
		if r.Contains(int(hash(fmt.Sprintf("key-%06d", i)) % 128)) {
			c++
		}
	}
	return c
}

func sharedOwn(m *checkpoint.Metadata) int64 {
	var n int64
	for _, op := range m.Operators {
		for _, f := range op.Files {
			if f.Shared && f.UploadedIn == m.ID {
				n += f.Size
			}
		}
	}
	return n
}

func sharedFiles(t *testing.T, dir string) []string {
	var out []string
	root := filepath.Join(dir, "shared")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func sharedBytes(t *testing.T, dir string) int64 {
	var n int64
	for _, f := range sharedFiles(t, dir) {
		st, err := os.Stat(filepath.Join(dir, "shared", f))
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// stateFiles reads the state files of operator uid in checkpoint c (not
// the database files listed next to them), as a restoring job does.
func stateFiles(t *testing.T, c *checkpoint.Checkpoint, uid string) []codec.StateFile {
	t.Helper()
	var out []codec.StateFile
	for _, o := range c.Metadata().Operators {
		if o.UID != uid {
			continue
		}
		for _, f := range o.Files {
			if f.Shared || !strings.HasSuffix(f.Name, ".state") {
				continue
			}
			data, err := c.ReadFile(f.Name)
			if err != nil {
				t.Fatal(err)
			}
			var st codec.StateFile
			if err := codec.Unmarshal(data, &st); err != nil {
				t.Fatal(err)
			}
			out = append(out, st)
		}
	}
	return out
}
