package incremental

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// MeasureOptions configure Measure: the bytes a checkpoint of Pebble
// state writes against the state's size (`weir bench checkpoint`).
type MeasureOptions struct {
	// Dir holds the database and the checkpoints (removed at the end).
	Dir string
	// Keys entries of ValueBytes each; between two checkpoints, Change
	// (a fraction) of the keys, spread over all of them, get new values.
	Keys       int
	ValueBytes int
	Change     float64
	// Checkpoints to take, the first after all keys were written.
	Checkpoints int
	// Mode: "full" (by key group, as without IncrementalCheckpoints),
	// "incremental" (IncrementalCheckpoints) or "changelog"
	// (StateChangelog, materialized by size alone).
	Mode string
	// MemoryBudget of the database (0: pebblestate's default).
	MemoryBudget int64
}

// MeasureRound is one checkpoint's figures.
type MeasureRound struct {
	Mode       string `json:"mode"`
	Checkpoint int64  `json:"checkpoint"`
	Changed    int    `json:"changed_keys"`
	// StateBytes are the files a restore reads (with the changelog: the
	// base and the log segments); ListedBytes all the files the
	// checkpoint lists (with the changelog, the next base's files
	// uploaded so far too); Written the files it wrote.
	StateBytes  int64         `json:"state_bytes"`
	ListedBytes int64         `json:"listed_bytes"`
	Written     int64         `json:"written_bytes"`
	Duration    time.Duration `json:"duration_ns"` // its synchronous and asynchronous parts
	// Log segments it lists (changelog mode; 0 for a materialization).
	LogSegments int `json:"log_segments"`
}

// Measure writes o.Keys entries into one operator subtask's Pebble
// backend, then takes o.Checkpoints checkpoints as a job does (a
// barrier's Snapshot, the coordinator's WriteLocal and commit), changing
// o.Change of the keys before each but the first, and reports each.
// Pebble compacts in the background as it would in a job.
func Measure(ctx context.Context, o MeasureOptions, report func(MeasureRound)) error {
	if o.Keys <= 0 || o.ValueBytes <= 0 || o.Checkpoints <= 0 || o.Change < 0 || o.Change > 1 {
		return fmt.Errorf("measure: want keys, value bytes and checkpoints > 0 and a change in [0, 1]")
	}
	if o.Mode != "full" && o.Mode != "incremental" && o.Mode != "changelog" {
		return fmt.Errorf("measure: mode %q: want full, incremental or changelog", o.Mode)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	root, err := os.MkdirTemp(o.Dir, "measure-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	store, err := checkpoint.Open(filepath.Join(root, "ck"), checkpoint.Retain(2), checkpoint.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	kr := state.KeyGroupRange{Start: 0, End: 128}
	be, err := Open(Options{Dir: filepath.Join(root, "subtask"), UID: "measure", Incremental: o.Mode != "full",
		Changelog: o.Mode == "changelog", MemoryBudget: o.MemoryBudget}, state.Config{MaxParallelism: 128, KeyGroups: kr})
	if err != nil {
		return err
	}
	defer be.Close()
	val, err := state.NewValueStore[string, state.VoidNamespace, []byte](be, "value", state.Options{})
	if err != nil {
		return err
	}
	hash, err := keygroup.Hasher[string]()
	if err != nil {
		return err
	}
	value := make([]byte, o.ValueBytes)
	key := make([]byte, 0, 16)
	put := func(i, version int) {
		key = strconv.AppendInt(append(key[:0], "key-"...), int64(i), 10)
		k := string(key)
		fillValue(value, uint64(i), uint64(version))
		val.Put(hash(k), k, state.VoidNamespace{}, value)
	}
	for i := range o.Keys {
		put(i, 0)
		if i%65536 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	changed := int(float64(o.Keys) * o.Change)
	for id := int64(1); id <= int64(o.Checkpoints); id++ {
		n := 0
		if id > 1 {
			n = changed
			for j := range changed {
				// spread over all keys: a stride prime to most key counts
				put(int((int64(j)*7919+id*104729)%int64(o.Keys)), int(id))
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		m, d, err := measureCheckpoint(store, be, id, o.Mode == "full")
		if err != nil {
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
		r := MeasureRound{Mode: o.Mode, Checkpoint: id, Changed: n, StateBytes: m.TotalSize(), ListedBytes: m.TotalSize(),
			Written: m.WrittenSize(), Duration: time.Since(start)}
		if d != nil {
			r.LogSegments = len(d.Log)
			sizes := map[string]int64{}
			for _, f := range m.Operators[0].Files {
				sizes[f.Name] = f.Size
			}
			r.StateBytes = sizes["op000-measure-0.state"]
			for _, f := range append(d.Files, d.Log...) {
				r.StateBytes += sizes[f.Ref]
			}
		}
		report(r)
	}
	return nil
}

// fillValue fills v with bytes that do not compress, a function of the key
// and the version.
func fillValue(v []byte, key, version uint64) {
	x := key*0x9E3779B97F4A7C15 ^ (version+1)*0xBF58476D1CE4E5B9
	var b [8]byte
	for i := 0; i < len(v); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[:], x)
		copy(v[i:], b[:])
	}
}

// measureCheckpoint takes checkpoint id of be into store, as a job does:
// by key group (full), or a local snapshot written by WriteLocal.
func measureCheckpoint(store *checkpoint.Store, be *Backend, id int64, full bool) (*checkpoint.Metadata, *Desc, error) {
	st := codec.StateFile{UID: "measure", Name: "measure", Parallelism: 1}
	var files []checkpoint.FileInfo
	var confirm func()
	if full {
		st.Groups = map[int][]byte{}
		r := be.KeyGroups()
		for kg := r.Start; kg < r.End; kg++ {
			data, err := state.SnapshotKeyGroup(be, kg)
			if err != nil {
				return nil, nil, err
			}
			if data != nil {
				st.Groups[kg] = data
			}
		}
	} else {
		token, err := be.Snapshot(id, false, false, 0)
		if err != nil {
			return nil, nil, err
		}
		st.Meta = map[string][]byte{LocalKey: token}
	}
	p, err := store.Begin(id, checkpoint.KindCheckpoint)
	if err != nil {
		return nil, nil, err
	}
	defer p.Abort()
	var d *Desc
	if !full {
		if st, files, confirm, err = WriteLocal(p, st, 0); err != nil {
			return nil, nil, err
		}
		d = new(Desc)
		if err := codec.Unmarshal(st.Meta[MetaKey], d); err != nil {
			return nil, nil, err
		}
	}
	data, err := codec.Marshal(st)
	if err != nil {
		return nil, nil, err
	}
	w, err := p.Create("op000-measure-0.state")
	if err != nil {
		return nil, nil, err
	}
	w.Write(data)
	fi, err := w.Close()
	if err != nil {
		return nil, nil, err
	}
	c, err := p.Commit(checkpoint.Metadata{Job: "measure", MaxParallelism: 128, Operators: []checkpoint.OperatorState{
		{UID: "measure", Name: "measure", Parallelism: 1, Files: append(files, fi)}}})
	if err != nil {
		return nil, nil, err
	}
	if confirm != nil {
		confirm()
	}
	return c.Metadata(), d, nil
}
