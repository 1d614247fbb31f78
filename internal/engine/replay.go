package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
)

// ReplaySafeCommitter is a Committer that can prove that its output stays
// exact when the job restores a checkpoint older than output it already
// committed, and so replays what followed that checkpoint: committing the
// replayed output again leaves the external system as if it had been
// committed once (a committer that upserts by a key the records determine,
// or that recognises every replayed record by a position it stored).
//
// A job refuses to restore such an older checkpoint (after its newest ones
// were damaged, or from an older savepoint) unless every committing sink
// of the job has a ReplaySafeCommitter that says so, or the job has the
// AllowDuplicateOutput option. None of the committing sinks of this module
// is replay safe: the exactly-once file, log, Kafka and PostgreSQL sinks
// name what they commit by checkpoint id and subtask, and the replay
// divides the same records into other checkpoints, so they cannot tell a
// replayed record from a new one.
type ReplaySafeCommitter interface {
	Committer
	// ReplaySafe reports whether committing replayed output is exact.
	ReplaySafe() bool
}

// ErrDuplicateOutput is matched (errors.Is) by the *DuplicateOutputError
// with which a job refuses to start.
var ErrDuplicateOutput = errors.New("weir: restoring would commit output twice")

// DuplicateOutputError is the error with which a job refuses to restore a
// checkpoint (or to start empty) when its sinks already committed the
// output of a later checkpoint or savepoint: the job would replay the
// records after the restored checkpoint and commit their output a second
// time.
type DuplicateOutputError struct {
	// Restore is the directory of the checkpoint or savepoint the job would
	// start from, and RestoreID its id ("" and 0: starting empty).
	Restore   string
	RestoreID int64
	// Committed are the checkpoints and savepoints after it whose output
	// the sinks committed, oldest first.
	Committed []CommittedCheckpoint
	// Sinks are the committing sinks that cannot prove exact replay.
	Sinks []string
}

// CommittedCheckpoint is a checkpoint or savepoint whose output the sinks
// committed, and, if it is in the checkpoint dir, why it cannot be
// restored.
type CommittedCheckpoint struct {
	ID     int64
	Kind   string // "checkpoint" or "savepoint"
	Path   string
	Reason string // why it is unusable ("" if it is not in the checkpoint dir, or usable)
}

func (e *DuplicateOutputError) Error() string {
	var b strings.Builder
	from := "start empty"
	if e.Restore != "" {
		from = fmt.Sprintf("restore checkpoint %d (%s)", e.RestoreID, e.Restore)
	}
	last := e.Committed[len(e.Committed)-1]
	fmt.Fprintf(&b, "weir: refusing to %s: the sinks already committed the output of", from)
	for i, c := range e.Committed {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s %d (%s", c.Kind, c.ID, c.Path)
		if c.Reason != "" {
			fmt.Fprintf(&b, ", unusable: %s", strings.TrimPrefix(c.Reason, "checkpoint: "))
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", and replaying from there would commit it a second time (sinks %q cannot prove otherwise). Choices: "+
		"restore from a savepoint taken at or after %s %d (RestoreFrom, --restore-from); "+
		"or accept duplicate output with AllowDuplicateOutput (--allow-duplicates)", e.Sinks, last.Kind, last.ID)
	return b.String()
}

// DuplicateOutput returns the refusal that AllowDuplicateOutput overrode
// when the job (last) started: the checkpoints whose committed output the
// replay commits a second time. It is nil when the job started without
// replaying committed output, so a program can report whether its output
// is still exactly once.
func (j *Job) DuplicateOutput() *DuplicateOutputError {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.dup
}

// Is makes errors.Is(err, ErrDuplicateOutput) true.
func (e *DuplicateOutputError) Is(target error) bool { return target == ErrDuplicateOutput }

// checkReplay refuses a start from checkpoint id restoreID at path
// (restoreID 0: empty) that would replay output the sinks committed, unless
// the job allows duplicates or its committing sinks prove the replay
// exact. Either exception is logged. It is the ckstore's CheckReplay.
func (j *Job) checkReplay(store *checkpoint.Store, restoreID int64, path string) error {
	recs, err := store.CommitRecords()
	if err != nil {
		return fmt.Errorf("weir: %w", err)
	}
	var ahead []checkpoint.CommitRecord
	for _, r := range recs {
		if r.ID > restoreID {
			ahead = append(ahead, r)
		}
	}
	if len(ahead) == 0 {
		return nil
	}
	var unsafe []string
	for _, n := range j.nodes {
		if n.committer == nil {
			continue
		}
		if rs, ok := n.committer.(ReplaySafeCommitter); !ok || !rs.ReplaySafe() {
			unsafe = append(unsafe, n.name)
		}
	}
	e := &DuplicateOutputError{Restore: path, RestoreID: restoreID, Sinks: unsafe}
	reasons := map[int64]string{}
	if infos, err := store.List(); err == nil {
		for _, in := range infos {
			if in.Err != nil {
				reasons[in.ID] = in.Err.Error()
			}
		}
	}
	for _, r := range ahead {
		c := CommittedCheckpoint{ID: r.ID, Kind: string(r.Kind), Path: r.Path, Reason: reasons[r.ID]}
		if r.Err != nil { // a damaged record: its name still gives the id
			c.Kind, c.Path = "checkpoint", r.File
		}
		if c.Kind == "" {
			c.Kind = "checkpoint"
		}
		e.Committed = append(e.Committed, c)
	}
	log := j.cfg.logger
	switch {
	case len(unsafe) == 0:
		log.Warn("restoring behind committed output; every committing sink is replay safe", "restore", path, "id", restoreID, "committed", len(ahead), "newest_committed", ahead[len(ahead)-1].ID)
		return nil
	case j.cfg.allowDup:
		log.Warn("restoring behind committed output: the replayed output is committed again (duplicates), as AllowDuplicateOutput allows", "err", e.Error())
		j.mu.Lock()
		j.mu.dup = e
		j.mu.Unlock()
		return nil
	}
	return e
}
