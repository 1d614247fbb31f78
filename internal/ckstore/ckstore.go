// Package ckstore connects a job to its checkpoint directory: it writes
// checkpoints and savepoints from the tasks' snapshots (state files, the
// sinks' committables, incremental Pebble files), records and runs the
// sinks' commits, and loads the checkpoint or savepoint a job restores
// (internal/checkpoint does the files, checksums and the atomic commit).
package ckstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/coordinator"
	"github.com/weirstream/weir/internal/incremental"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/metrics"
	_ "github.com/weirstream/weir/internal/s3fs" // s3:// checkpoint directories
)

// Stage names a point in the completion of a checkpoint, for Config.Hook.
type Stage string

// The stages a hook is called at, in order.
const (
	// StageStateFile: one more state file is written (reported per file):
	// the checkpoint is half written.
	StageStateFile Stage = "state-file"
	// StageFilesWritten: every state file is written; the metadata is not,
	// so the checkpoint is not complete yet.
	StageFilesWritten Stage = "files-written"
	// StageComplete: the metadata is written; sinks have pre-committed but
	// not committed.
	StageComplete Stage = "complete"
	// StageCommitted: the sinks committed the checkpoint's output.
	StageCommitted Stage = "committed"
)

// Config is what a Store needs of its job.
type Config struct {
	Dir    string
	Retain int
	Logger *slog.Logger
	// Hook is called at the stages of writing a checkpoint (crash tests).
	Hook func(Stage, int64)
	// Job, MaxParallelism and Options are recorded in the metadata.
	Job            string
	MaxParallelism int
	Options        string
	Metrics        *metrics.Checkpoints
	// RestoreFrom is the job's savepoint to restore (Latest returns nil
	// rather than start empty when the directory has no checkpoint yet);
	// StartFresh starts empty when no checkpoint is usable.
	RestoreFrom string
	StartFresh  bool
	// CheckReplay refuses a start from checkpoint restoreID at path
	// (restoreID 0: empty) that would replay output the sinks committed
	// (the job's policy: weir.DuplicateOutputError).
	CheckReplay func(store *checkpoint.Store, restoreID int64, path string) error
	// OnPersist, if set, is called with every checkpoint's snapshots once
	// its files are written, before it counts as complete (group mode:
	// the keyed state goes to the changelog topics in the open
	// transaction). An error fails the checkpoint.
	OnPersist func(id int64, snaps []*coordinator.TaskSnapshot) error
}

// Store connects a job to its checkpoint directory.
type Store struct {
	cfg   Config
	store *checkpoint.Store

	// last is the checkpoint or savepoint persisted last: commit records
	// its kind and path. Used by the coordinator goroutine only.
	last struct {
		id   int64
		kind checkpoint.Kind
		path string
	}
}

// Open opens the checkpoint directory cfg.Dir.
func Open(cfg Config) (*Store, error) {
	s, err := checkpoint.Open(cfg.Dir, checkpoint.Retain(cfg.Retain), checkpoint.WithLogger(cfg.Logger), checkpoint.VerifyContents())
	if err != nil {
		return nil, fmt.Errorf("weir: checkpoint dir: %w", err)
	}
	return &Store{cfg: cfg, store: s}, nil
}

// Checkpoints is the checkpoint directory.
func (s *Store) Checkpoints() *checkpoint.Store { return s.store }

// Persist writes one checkpoint: a state file per operator subtask, then
// the metadata, atomically, last.
func (s *Store) Persist(ctx context.Context, id int64, final bool, snaps []*coordinator.TaskSnapshot) error {
	p, err := s.store.Begin(id, checkpoint.KindCheckpoint)
	if err != nil {
		return err
	}
	meta, confirms, err := s.write(p, final, snaps)
	if err != nil {
		p.Abort()
		return err
	}
	s.hook(StageFilesWritten, id)
	c, err := p.Commit(*meta)
	if err != nil {
		p.Abort()
		return err
	}
	for _, fn := range confirms {
		fn()
	}
	if s.cfg.OnPersist != nil {
		if err := s.cfg.OnPersist(id, snaps); err != nil {
			return err
		}
	}
	s.last.id, s.last.kind, s.last.path = id, checkpoint.KindCheckpoint, c.Path()
	s.cfg.Metrics.LastSizeBytes.Store(c.Metadata().TotalSize())
	s.hook(StageComplete, id)
	return nil
}

// PersistSavepoint writes a savepoint into path (which must not exist).
func (s *Store) PersistSavepoint(ctx context.Context, id int64, path string, snaps []*coordinator.TaskSnapshot) error {
	p, err := s.store.BeginSavepointAt(path, id)
	if err != nil {
		return err
	}
	meta, _, err := writeSnapshot(s.cfg, p, false, snaps, nil)
	if err != nil {
		p.Abort()
		return err
	}
	if _, err := p.Commit(*meta); err != nil {
		p.Abort()
		return err
	}
	s.last.id, s.last.kind, s.last.path = id, checkpoint.KindSavepoint, p.Path()
	return nil
}

func (s *Store) hook(stage Stage, id int64) {
	if h := s.cfg.Hook; h != nil {
		h(stage, id)
	}
}

func (s *Store) write(p *checkpoint.Pending, final bool, snaps []*coordinator.TaskSnapshot) (*checkpoint.Metadata, []func(), error) {
	return writeSnapshot(s.cfg, p, final, snaps, func() { s.hook(StageStateFile, p.ID()) })
}

// writeSnapshot writes the state files of a checkpoint or savepoint and
// returns its metadata, and what to call once it is complete (incremental
// Pebble state learns which files the store has).
func writeSnapshot(cfg Config, p *checkpoint.Pending, final bool, snaps []*coordinator.TaskSnapshot, fileDone func()) (*checkpoint.Metadata, []func(), error) {
	maxP := cfg.MaxParallelism
	meta := &checkpoint.Metadata{
		Job:            cfg.Job,
		MaxParallelism: maxP,
		JobOptions:     map[string]string{"options": cfg.Options, "final": fmt.Sprint(final)},
	}
	index := map[string]int{}
	op := func(uid, name string, par int) *checkpoint.OperatorState {
		i, ok := index[uid]
		if !ok {
			i = len(meta.Operators)
			index[uid] = i
			meta.Operators = append(meta.Operators, checkpoint.OperatorState{UID: uid, Name: name, Parallelism: par})
		}
		return &meta.Operators[i]
	}
	commits := map[string][][]byte{}
	var commitOps []coordinator.Committable
	var confirms []func()
	for _, snap := range snaps {
		for _, st := range snap.States {
			o := op(st.UID, st.Name, st.Parallelism)
			if _, ok := st.Meta[incremental.LocalKey]; ok {
				var files []checkpoint.FileInfo
				var confirm func()
				var err error
				if st, files, confirm, err = incremental.WriteLocal(p, st, index[st.UID]); err != nil {
					return nil, nil, err
				}
				o.Files = append(o.Files, files...)
				if confirm != nil {
					confirms = append(confirms, confirm)
				}
			}
			name := fmt.Sprintf("op%03d-%s-%d.state", index[st.UID], checkpoint.SafeName(st.UID), st.Subtask)
			w, err := p.Create(name)
			if err != nil {
				return nil, nil, err
			}
			// Streamed: no buffer the size of the state (codec.WriteStateFile).
			if err := codec.WriteStateFile(w, &st); err != nil {
				w.Close()
				return nil, nil, err
			}
			fi, err := w.Close()
			if err != nil {
				return nil, nil, err
			}
			if fileDone != nil {
				fileDone()
			}
			fi.Subtask = st.Subtask
			if st.Groups != nil {
				lo, hi := keygroup.Range(st.Subtask, st.Parallelism, maxP)
				fi.KeyGroups = &checkpoint.KeyGroupRange{Start: lo, End: hi}
			}
			o.Files = append(o.Files, fi)
		}
		for _, c := range snap.Committables {
			if _, seen := commits[c.UID]; !seen {
				commitOps = append(commitOps, c)
			}
			commits[c.UID] = append(commits[c.UID], c.Data)
		}
	}
	for _, c := range commitOps {
		raw, err := json.Marshal(commits[c.UID])
		if err != nil {
			return nil, nil, err
		}
		o := op(c.UID, c.Name, c.Parallelism)
		if o.Extra == nil {
			o.Extra = map[string]json.RawMessage{}
		}
		o.Extra["committables"] = raw
	}
	return meta, confirms, nil
}

// Commit makes the output of a completed checkpoint visible. It records
// the commit first (see RecordCommit).
func (s *Store) Commit(ctx context.Context, id int64, snaps []*coordinator.TaskSnapshot) error {
	kind, path := checkpoint.KindCheckpoint, ""
	if s.last.id == id {
		kind, path = s.last.kind, s.last.path
	}
	if err := s.RecordCommit(id, kind, path, snaps); err != nil {
		return err
	}
	for _, snap := range snaps {
		for _, c := range snap.Committables {
			if c.Committer == nil {
				continue
			}
			if err := c.Committer.Commit(ctx, c.Data); err != nil {
				return err
			}
		}
	}
	s.hook(StageCommitted, id)
	return nil
}

// RecordCommit records in the checkpoint dir, durably, that the output of
// checkpoint or savepoint id is about to be committed, if snaps hold any
// output to commit. It comes before the commit, so that a crash between
// the two errs on the safe side: a restore never falls back past output
// that may have been committed without knowing it (see Config.CheckReplay).
func (s *Store) RecordCommit(id int64, kind checkpoint.Kind, path string, snaps []*coordinator.TaskSnapshot) error {
	for _, snap := range snaps {
		for _, c := range snap.Committables {
			if c.Committer != nil && len(c.Data) > 0 {
				return s.store.RecordCommit(id, kind, path)
			}
		}
	}
	return nil
}

// Latest loads the newest usable checkpoint: nil when there is none. When
// checkpoints exist but none is usable, the job refuses to start unless
// told to start fresh. Either way, it refuses a start that would replay
// output the sinks committed (Config.CheckReplay).
func (s *Store) Latest() (*Restored, error) {
	c, err := s.store.Latest()
	switch {
	case errors.Is(err, checkpoint.ErrNoCheckpoint) && s.cfg.RestoreFrom != "":
		// A restart before the first checkpoint after RestoreFrom: the
		// job restores the savepoint again (checked when it was loaded).
		return nil, nil
	case errors.Is(err, checkpoint.ErrNoCheckpoint):
		return nil, s.cfg.CheckReplay(s.store, 0, "")
	case errors.Is(err, checkpoint.ErrNoValidCheckpoint) && s.cfg.StartFresh:
		s.cfg.Logger.Warn("no usable checkpoint; starting fresh as told", "err", err)
		return nil, s.cfg.CheckReplay(s.store, 0, "")
	case errors.Is(err, checkpoint.ErrNoValidCheckpoint):
		if rerr := s.cfg.CheckReplay(s.store, 0, ""); rerr != nil {
			return nil, fmt.Errorf("weir: refusing to start: %w; pass StartFresh to start empty, and %w", err, rerr)
		}
		return nil, fmt.Errorf("weir: refusing to start: %w (pass StartFresh to start empty)", err)
	case err != nil:
		return nil, err
	}
	if err := s.cfg.CheckReplay(s.store, c.ID(), c.Path()); err != nil {
		return nil, err
	}
	return Load(c)
}

// LoadSavepoint loads the savepoint or checkpoint at path, for RestoreFrom.
// With a checkpoint dir (store), it refuses one older than output the
// sinks committed, as latest does.
func LoadSavepoint(cfg Config, store *Store, path string) (*Restored, error) {
	c, err := checkpoint.OpenPath(path, checkpoint.WithLogger(cfg.Logger))
	if err != nil {
		return nil, fmt.Errorf("weir: restore from %s: %w", path, err)
	}
	if err := c.Verify(); err != nil {
		return nil, fmt.Errorf("weir: restore from %s: %w", path, err)
	}
	if mp := c.Metadata().MaxParallelism; mp != cfg.MaxParallelism {
		return nil, fmt.Errorf("weir: restore from %s: it was taken with max parallelism %d, the job has %d (key groups cannot change)", path, mp, cfg.MaxParallelism)
	}
	if store != nil {
		if err := store.cfg.CheckReplay(store.store, c.ID(), c.Path()); err != nil {
			return nil, err
		}
	}
	return Load(c)
}

// Load reads the state files and committables of checkpoint c.
func Load(c *checkpoint.Checkpoint) (*Restored, error) {
	r := &Restored{ID: c.ID(), Path: c.Path(), Checkpoint: c, Ops: map[string][]codec.StateFile{}, Commits: map[string][][]byte{}}
	for _, o := range c.Metadata().Operators {
		for _, f := range o.Files {
			if !isStateFile(f) {
				continue // a file of a Pebble database: its backend reads it
			}
			data, err := c.ReadFile(f.Name)
			if err != nil {
				return nil, err
			}
			var st codec.StateFile
			if err := codec.Unmarshal(data, &st); err != nil {
				return nil, fmt.Errorf("weir: %s/%s: %w", c.Path(), f.Name, err)
			}
			r.Ops[o.UID] = append(r.Ops[o.UID], st)
		}
		if raw, ok := o.Extra["committables"]; ok {
			var list [][]byte
			if err := json.Unmarshal(raw, &list); err != nil {
				return nil, fmt.Errorf("weir: %s: committables of %q: %w", c.Path(), o.UID, err)
			}
			r.Commits[o.UID] = list
		}
	}
	return r, nil
}

// isStateFile reports whether f is an operator subtask's state file (an
// encoded codec.StateFile), rather than a file of a Pebble database that an
// incremental checkpoint saved (shared, or named op<i>-<uid>-<subtask>.db.<file>).
func isStateFile(f checkpoint.FileInfo) bool {
	return !f.Shared && strings.HasSuffix(f.Name, ".state") && !strings.Contains(f.Name, ".db.")
}

// Restored is the state a job restores from: every operator subtask's
// state of one checkpoint or savepoint, by operator UID.
type Restored struct {
	ID   int64
	Path string
	// Checkpoint is the checkpoint, for restores that read more of its
	// files (incremental Pebble state).
	Checkpoint *checkpoint.Checkpoint
	Ops        map[string][]codec.StateFile
	// Commits are the committables of two-phase-commit sinks, by UID.
	Commits map[string][][]byte
}
