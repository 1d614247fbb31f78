package weir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/incremental"
	"github.com/weirstream/weir/internal/keygroup"
)

// ckStore connects a job to its checkpoint directory (internal/checkpoint
// does the files, checksums and the atomic commit).
type ckStore struct {
	job   *Job
	store *checkpoint.Store

	// last is the checkpoint or savepoint persisted last: commit records
	// its kind and path. Used by the coordinator goroutine only.
	last struct {
		id   int64
		kind checkpoint.Kind
		path string
	}
}

func openCkStore(j *Job) (*ckStore, error) {
	s, err := checkpoint.Open(j.cfg.ckDir, checkpoint.Retain(j.cfg.ckRetain), checkpoint.WithLogger(j.cfg.logger), checkpoint.VerifyContents())
	if err != nil {
		return nil, fmt.Errorf("weir: checkpoint dir: %w", err)
	}
	return &ckStore{job: j, store: s}, nil
}

// persist writes one checkpoint: a state file per operator subtask, then
// the metadata, atomically, last.
func (s *ckStore) persist(ctx context.Context, id int64, final bool, snaps []*taskSnapshot) error {
	p, err := s.store.Begin(id, checkpoint.KindCheckpoint)
	if err != nil {
		return err
	}
	meta, confirms, err := s.write(p, final, snaps)
	if err != nil {
		p.Abort()
		return err
	}
	s.hook(hooks.StageFilesWritten, id)
	c, err := p.Commit(*meta)
	if err != nil {
		p.Abort()
		return err
	}
	for _, fn := range confirms {
		fn()
	}
	s.last.id, s.last.kind, s.last.path = id, checkpoint.KindCheckpoint, c.Path()
	s.job.metrics.Checkpoints.LastSizeBytes.Store(c.Metadata().TotalSize())
	s.hook(hooks.StageComplete, id)
	return nil
}

// persistSavepoint writes a savepoint into path (which must not exist).
func (s *ckStore) persistSavepoint(ctx context.Context, id int64, path string, snaps []*taskSnapshot) error {
	p, err := s.store.BeginSavepointAt(path, id)
	if err != nil {
		return err
	}
	meta, _, err := writeSnapshot(s.job, p, false, snaps, nil)
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

func (s *ckStore) hook(stage hooks.Stage, id int64) {
	if h := s.job.cfg.ckHook; h != nil {
		h(stage, id)
	}
}

func (s *ckStore) write(p *checkpoint.Pending, final bool, snaps []*taskSnapshot) (*checkpoint.Metadata, []func(), error) {
	return writeSnapshot(s.job, p, final, snaps, func() { s.hook(hooks.StageStateFile, p.ID()) })
}

// writeSnapshot writes the state files of a checkpoint or savepoint and
// returns its metadata, and what to call once it is complete (incremental
// Pebble state learns which files the store has).
func writeSnapshot(j *Job, p *checkpoint.Pending, final bool, snaps []*taskSnapshot, fileDone func()) (*checkpoint.Metadata, []func(), error) {
	maxP := j.cfg.maxParallelism
	meta := &checkpoint.Metadata{
		Job:            j.name,
		MaxParallelism: maxP,
		JobOptions:     map[string]string{"options": j.cfg.String(), "final": fmt.Sprint(final)},
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
	var commitOps []pendingCommit
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
			data, err := encode(st)
			if err != nil {
				return nil, nil, err
			}
			w, err := p.Create(name)
			if err != nil {
				return nil, nil, err
			}
			if _, err := w.Write(data); err != nil {
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

// commit makes the output of a completed checkpoint visible. It records
// the commit first (see recordCommit).
func (s *ckStore) commit(ctx context.Context, id int64, snaps []*taskSnapshot) error {
	kind, path := checkpoint.KindCheckpoint, ""
	if s.last.id == id {
		kind, path = s.last.kind, s.last.path
	}
	if err := s.recordCommit(id, kind, path, snaps); err != nil {
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
	s.hook(hooks.StageCommitted, id)
	return nil
}

// recordCommit records in the checkpoint dir, durably, that the output of
// checkpoint or savepoint id is about to be committed, if snaps hold any
// output to commit. It comes before the commit, so that a crash between
// the two errs on the safe side: a restore never falls back past output
// that may have been committed without knowing it (see checkReplay).
func (s *ckStore) recordCommit(id int64, kind checkpoint.Kind, path string, snaps []*taskSnapshot) error {
	for _, snap := range snaps {
		for _, c := range snap.Committables {
			if c.Committer != nil && len(c.Data) > 0 {
				return s.store.RecordCommit(id, kind, path)
			}
		}
	}
	return nil
}

// latest loads the newest usable checkpoint: nil when there is none. When
// checkpoints exist but none is usable, the job refuses to start unless
// told to start fresh. Either way, it refuses a start that would replay
// output the sinks committed (checkReplay).
func (s *ckStore) latest() (*restoredState, error) {
	c, err := s.store.Latest()
	switch {
	case errors.Is(err, checkpoint.ErrNoCheckpoint) && s.job.cfg.restoreFrom != "":
		// A restart before the first checkpoint after RestoreFrom: the
		// job restores the savepoint again (checked when it was loaded).
		return nil, nil
	case errors.Is(err, checkpoint.ErrNoCheckpoint):
		return nil, s.checkReplay(0, "")
	case errors.Is(err, checkpoint.ErrNoValidCheckpoint) && s.job.cfg.startFresh:
		s.job.cfg.logger.Warn("no usable checkpoint; starting fresh as told", "err", err)
		return nil, s.checkReplay(0, "")
	case errors.Is(err, checkpoint.ErrNoValidCheckpoint):
		if rerr := s.checkReplay(0, ""); rerr != nil {
			return nil, fmt.Errorf("weir: refusing to start: %w; pass StartFresh to start empty, and %w", err, rerr)
		}
		return nil, fmt.Errorf("weir: refusing to start: %w (pass StartFresh to start empty)", err)
	case err != nil:
		return nil, err
	}
	if err := s.checkReplay(c.ID(), c.Path()); err != nil {
		return nil, err
	}
	return loadCheckpoint(c)
}

// loadSavepoint loads the savepoint or checkpoint at path, for RestoreFrom.
// With a checkpoint dir (store), it refuses one older than output the
// sinks committed, as latest does.
func loadSavepoint(j *Job, store *ckStore, path string) (*restoredState, error) {
	c, err := checkpoint.OpenPath(path, checkpoint.WithLogger(j.cfg.logger))
	if err != nil {
		return nil, fmt.Errorf("weir: restore from %s: %w", path, err)
	}
	if err := c.Verify(); err != nil {
		return nil, fmt.Errorf("weir: restore from %s: %w", path, err)
	}
	if mp := c.Metadata().MaxParallelism; mp != j.cfg.maxParallelism {
		return nil, fmt.Errorf("weir: restore from %s: it was taken with max parallelism %d, the job has %d (key groups cannot change)", path, mp, j.cfg.maxParallelism)
	}
	if store != nil {
		if err := store.checkReplay(c.ID(), c.Path()); err != nil {
			return nil, err
		}
	}
	return loadCheckpoint(c)
}

func loadCheckpoint(c *checkpoint.Checkpoint) (*restoredState, error) {
	r := &restoredState{id: c.ID(), path: c.Path(), ck: c, ops: map[string][]opState{}, commits: map[string][][]byte{}}
	for _, o := range c.Metadata().Operators {
		for _, f := range o.Files {
			if !isStateFile(f) {
				continue // a file of a Pebble database: its backend reads it
			}
			data, err := c.ReadFile(f.Name)
			if err != nil {
				return nil, err
			}
			var st opState
			if err := decode(data, &st); err != nil {
				return nil, fmt.Errorf("weir: %s/%s: %w", c.Path(), f.Name, err)
			}
			r.ops[o.UID] = append(r.ops[o.UID], st)
		}
		if raw, ok := o.Extra["committables"]; ok {
			var list [][]byte
			if err := json.Unmarshal(raw, &list); err != nil {
				return nil, fmt.Errorf("weir: %s: committables of %q: %w", c.Path(), o.UID, err)
			}
			r.commits[o.UID] = list
		}
	}
	return r, nil
}

// isStateFile reports whether f is an operator subtask's state file (an
// encoded opState), rather than a file of a Pebble database that an
// incremental checkpoint saved (shared, or named op<i>-<uid>-<subtask>.db.<file>).
func isStateFile(f checkpoint.FileInfo) bool {
	return !f.Shared && strings.HasSuffix(f.Name, ".state") && !strings.Contains(f.Name, ".db.")
}
