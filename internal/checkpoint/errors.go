package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

var (
	// ErrNoCheckpoint is returned by Store.Latest when the directory holds no
	// checkpoint or savepoint at all: a fresh job.
	ErrNoCheckpoint = errors.New("checkpoint: no checkpoint")
	// ErrNoValidCheckpoint is wrapped by the *NoValidCheckpointError that
	// Store.Latest returns when checkpoints exist but none is usable.
	ErrNoValidCheckpoint = errors.New("checkpoint: no valid checkpoint")
	// ErrCorrupt is matched (errors.Is) by every *CorruptError.
	ErrCorrupt = errors.New("checkpoint: corrupt")
	// ErrUnsupportedVersion is matched by every *VersionError.
	ErrUnsupportedVersion = errors.New("checkpoint: unsupported format version")
	// ErrExists is returned when the directory a checkpoint would be
	// written to already exists, or a file name is used twice.
	ErrExists = errors.New("checkpoint: already exists")
	// ErrStaleID is returned by Begin for an id that is not greater than
	// the id of a checkpoint already in the directory (complete, corrupt or
	// in progress): ids order checkpoints, so they must only grow. Use
	// Store.NextID.
	ErrStaleID = errors.New("checkpoint: id not greater than an existing checkpoint's")
	// ErrSubsumed is returned by Commit when a checkpoint with a greater id
	// completed in the meantime (concurrent checkpoints): the older one is
	// discarded, as in Flink.
	ErrSubsumed = errors.New("checkpoint: subsumed by a newer checkpoint")
	// ErrDone is returned when a Pending, or one of its FileWriters, is
	// used after Commit or Abort.
	ErrDone = errors.New("checkpoint: pending checkpoint already committed or aborted")
	// ErrReadOnly is returned by Begin on a store opened with ReadOnly.
	ErrReadOnly = errors.New("checkpoint: store is read-only")
)

// CorruptError reports a checkpoint whose files are not what was written:
// missing, truncated, with a wrong checksum, or with metadata that does not
// parse. Path names the file or directory.
type CorruptError struct {
	Path   string
	Reason string
}

func (e *CorruptError) Error() string {
	return "checkpoint: corrupt " + e.Path + ": " + e.Reason
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func corruptf(path, format string, args ...any) *CorruptError {
	return &CorruptError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// VersionError reports a _metadata file in a format version this build does
// not read: written by a newer weir.
type VersionError struct {
	Path    string
	Version int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("checkpoint: %s: unsupported format version %d (this build reads %d)",
		e.Path, e.Version, FormatVersion)
}

// Is makes errors.Is(err, ErrUnsupportedVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrUnsupportedVersion }

// Rejection is a checkpoint directory that Store.Latest skipped, and why.
type Rejection struct {
	Path string
	Err  error
}

// NoValidCheckpointError is returned by Store.Latest when checkpoints exist
// but none is usable. It matches ErrNoValidCheckpoint, and through Unwrap
// each rejection's error (ErrCorrupt, ErrUnsupportedVersion).
type NoValidCheckpointError struct {
	Dir      string
	Rejected []Rejection // newest first
}

func (e *NoValidCheckpointError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "checkpoint: no valid checkpoint in %s (%d rejected):", e.Dir, len(e.Rejected))
	for _, r := range e.Rejected {
		// Each error names its file; the package prefix once is enough.
		b.WriteString("\n  ")
		b.WriteString(strings.TrimPrefix(r.Err.Error(), "checkpoint: "))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrNoValidCheckpoint) true.
func (e *NoValidCheckpointError) Is(target error) bool { return target == ErrNoValidCheckpoint }

// Unwrap returns the rejections' errors.
func (e *NoValidCheckpointError) Unwrap() []error {
	errs := make([]error, len(e.Rejected))
	for i, r := range e.Rejected {
		errs[i] = r.Err
	}
	return errs
}

// IsUnusable reports whether err says a checkpoint cannot be restored
// because of its content (corrupt, or a format version this build does not
// read), as opposed to an I/O error that may be transient. Store.Latest
// falls back to an older checkpoint only for unusable ones.
func IsUnusable(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupportedVersion)
}

// withPath makes sure err names path. FS implementations already return
// *fs.PathError or *os.LinkError; anything else gets wrapped in one, so that
// a failed checkpoint always says which file failed.
func withPath(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	var le *os.LinkError
	if errors.As(err, &pe) || errors.As(err, &le) {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}
