package checkpoint

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strings"
	"time"
)

// FormatVersion is the newest version of the checkpoint format: this build
// reads versions 1 to FormatVersion. Version 2 added shared files
// (FileInfo.Shared, incremental checkpoints); a checkpoint without them is
// written as version 1, which builds that predate version 2 read. The
// envelope of _metadata (a JSON body, then a "crc32c <hex>" line) is the
// same in every version, so that a newer file is reported as such
// (*VersionError) rather than as corrupt.
const FormatVersion = 2

// sharedVersion is the first format version with shared files.
const sharedVersion = 2

// SharedDirName is the directory, next to the checkpoint directories, that
// holds the files incremental checkpoints share.
const SharedDirName = "shared"

const (
	metadataName = "_metadata"
	metadataTmp  = "_metadata.tmp"
	// metadataCopyName is the second copy of _metadata, byte for byte
	// (written since this build; older checkpoints have none, and older
	// builds ignore it).
	metadataCopyName = "_metadata.copy"
	// maxMetadataSize bounds what a reader loads: metadata is small (state
	// lives in files), so anything larger is garbage.
	maxMetadataSize = 64 << 20
	trailerPrefix   = "crc32c "
	trailerLen      = len(trailerPrefix) + 8 + 1 // prefix, 8 hex digits, '\n'
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Kind says whether a checkpoint was taken periodically, for recovery, or
// on demand, as a savepoint.
type Kind string

// The kinds of checkpoints.
const (
	KindCheckpoint Kind = "checkpoint"
	KindSavepoint  Kind = "savepoint"
)

func (k Kind) valid() bool { return k == KindCheckpoint || k == KindSavepoint }

// Metadata describes a checkpoint: it is the content of its _metadata file.
type Metadata struct {
	// FormatVersion, ID and Kind are set by Commit.
	FormatVersion int    `json:"format_version"`
	ID            int64  `json:"checkpoint_id"`
	Kind          Kind   `json:"kind"`
	Job           string `json:"job_name"`
	// Created is set by Commit, if zero, to the time Begin was called.
	Created time.Time `json:"created"`
	// JobOptions are the job's options, saved so that a restore can check
	// or reuse them. Opaque here.
	JobOptions     map[string]string `json:"job_options,omitempty"`
	MaxParallelism int               `json:"max_parallelism"`
	Operators      []OperatorState   `json:"operators"`
}

// OperatorState is one operator's share of a checkpoint.
type OperatorState struct {
	// UID identifies the operator across job versions: state is matched to
	// operators by UID on restore.
	UID         string `json:"uid"`
	Name        string `json:"name"`
	Parallelism int    `json:"parallelism"`
	// Files are the operator's state files, as returned by FileWriter.Close
	// with Subtask and KeyGroups filled in.
	Files []FileInfo `json:"files"`
	// Extra holds small per-operator metadata that does not deserve a file
	// (source split offsets, watermarks). Opaque here.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// FileInfo describes one state file.
type FileInfo struct {
	Name   string   `json:"name"`
	Size   int64    `json:"size"`
	CRC32C Checksum `json:"crc32c"`
	// Subtask is the index of the subtask that wrote the file.
	Subtask int `json:"subtask"`
	// KeyGroups is the key-group range the file holds, or nil for
	// operator (non-keyed) state.
	KeyGroups *KeyGroupRange `json:"key_groups,omitempty"`
	// Shared marks a file of the shared area (format version 2): Name is
	// then a slash-separated path under SharedDirName, next to the
	// checkpoint's directory, and the file may be listed by several
	// checkpoints (an SST file that did not change between incremental
	// checkpoints). Retention deletes a shared file once no checkpoint
	// left in the store lists it. Savepoints never list shared files.
	Shared bool `json:"shared,omitempty"`
	// UploadedIn is, for a shared file, the id of the checkpoint that
	// wrote it: the checkpoint's own uploads are the files whose
	// UploadedIn is its ID.
	UploadedIn int64 `json:"uploaded_in,omitempty"`
}

// KeyGroupRange is a half-open range [Start, End) of key groups.
type KeyGroupRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

func (r KeyGroupRange) String() string { return fmt.Sprintf("[%d, %d)", r.Start, r.End) }

// Checksum is a CRC-32C (Castagnoli). It is written as 8 hex digits.
type Checksum uint32

func (c Checksum) String() string { return fmt.Sprintf("%08x", uint32(c)) }

// MarshalText implements encoding.TextMarshaler.
func (c Checksum) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Checksum) UnmarshalText(b []byte) error {
	var v [4]byte
	if len(b) != 8 {
		return fmt.Errorf("checksum %q: want 8 hex digits", b)
	}
	if _, err := hex.Decode(v[:], b); err != nil {
		return fmt.Errorf("checksum %q: %w", b, err)
	}
	*c = Checksum(uint32(v[0])<<24 | uint32(v[1])<<16 | uint32(v[2])<<8 | uint32(v[3]))
	return nil
}

// TotalSize returns the size of all state files, shared ones included:
// the full size of the state.
func (m *Metadata) TotalSize() int64 {
	var n int64
	for _, op := range m.Operators {
		for _, f := range op.Files {
			n += f.Size
		}
	}
	return n
}

// SharedSize returns the size of the shared files the checkpoint lists.
func (m *Metadata) SharedSize() int64 {
	var n int64
	for _, op := range m.Operators {
		for _, f := range op.Files {
			if f.Shared {
				n += f.Size
			}
		}
	}
	return n
}

// WrittenSize returns the bytes the checkpoint wrote: its own files and the
// shared files it uploaded, but not the shared files earlier checkpoints
// wrote and it reuses. For a checkpoint without shared files it is
// TotalSize; for an incremental one, the size of the increment.
func (m *Metadata) WrittenSize() int64 {
	var n int64
	for _, op := range m.Operators {
		for _, f := range op.Files {
			if !f.Shared || f.UploadedIn == m.ID {
				n += f.Size
			}
		}
	}
	return n
}

// HasShared reports whether the checkpoint lists shared files: whether it
// is incremental.
func (m *Metadata) HasShared() bool {
	for _, op := range m.Operators {
		for _, f := range op.Files {
			if f.Shared {
				return true
			}
		}
	}
	return false
}

// validate checks what a restore relies on: unique operators and file
// names, file names that stay inside the directory, subtasks and key
// groups within the parallelism.
func (m *Metadata) validate() error {
	switch {
	case m.FormatVersion < 1 || m.FormatVersion > FormatVersion:
		return fmt.Errorf("format version %d, want 1 to %d", m.FormatVersion, FormatVersion)
	case m.ID < 1:
		return fmt.Errorf("checkpoint id %d: must be at least 1", m.ID)
	case !m.Kind.valid():
		return fmt.Errorf("kind %q: want %q or %q", m.Kind, KindCheckpoint, KindSavepoint)
	case m.MaxParallelism < 1:
		return fmt.Errorf("max parallelism %d: must be at least 1", m.MaxParallelism)
	}
	uids := make(map[string]bool, len(m.Operators))
	names := make(map[string]bool)
	for i, op := range m.Operators {
		switch {
		case op.UID == "":
			return fmt.Errorf("operator %d: empty uid", i)
		case uids[op.UID]:
			return fmt.Errorf("operator %q: listed twice", op.UID)
		case op.Parallelism < 1:
			return fmt.Errorf("operator %q: parallelism %d: must be at least 1", op.UID, op.Parallelism)
		}
		uids[op.UID] = true
		for _, f := range op.Files {
			if f.Shared {
				switch err := validSharedName(f.Name); {
				case err != nil:
					return fmt.Errorf("operator %q: %w", op.UID, err)
				case m.FormatVersion < sharedVersion:
					return fmt.Errorf("operator %q: shared file %q in format version %d (shared files need version %d)",
						op.UID, f.Name, m.FormatVersion, sharedVersion)
				case m.Kind == KindSavepoint:
					return fmt.Errorf("operator %q: shared file %q: a savepoint must be self-contained", op.UID, f.Name)
				case f.UploadedIn < 1 || f.UploadedIn > m.ID:
					return fmt.Errorf("operator %q: shared file %q: uploaded in checkpoint %d, not in [1, %d]",
						op.UID, f.Name, f.UploadedIn, m.ID)
				}
			} else if err := validName(f.Name); err != nil {
				return fmt.Errorf("operator %q: %w", op.UID, err)
			} else if f.UploadedIn != 0 {
				return fmt.Errorf("operator %q: file %q: uploaded_in is for shared files", op.UID, f.Name)
			}
			switch kg := f.KeyGroups; {
			case names[f.Name]:
				return fmt.Errorf("operator %q: file %q listed twice", op.UID, f.Name)
			case f.Size < 0:
				return fmt.Errorf("operator %q: file %q: size %d", op.UID, f.Name, f.Size)
			case f.Subtask < 0 || f.Subtask >= op.Parallelism:
				return fmt.Errorf("operator %q: file %q: subtask %d not in [0, %d)",
					op.UID, f.Name, f.Subtask, op.Parallelism)
			case kg != nil && (kg.Start < 0 || kg.Start >= kg.End || kg.End > m.MaxParallelism):
				return fmt.Errorf("operator %q: file %q: key groups %v not a non-empty range within [0, %d)",
					op.UID, f.Name, *kg, m.MaxParallelism)
			}
			names[f.Name] = true
		}
	}
	return nil
}

// validName accepts the names of state files: flat, portable, and not
// starting with '_' (reserved for _metadata) or '.'.
func validName(name string) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("file name %q: must be 1 to 255 bytes", name)
	}
	if name[0] == '_' || name[0] == '.' {
		return fmt.Errorf("file name %q: must not start with '_' or '.'", name)
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("file name %q: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return nil
}

// validSharedName accepts the names of shared files: one or more
// slash-separated components, each a valid state file name (so no "." or
// ".." and nothing absolute).
func validSharedName(name string) error {
	if name == "" || len(name) > 1024 {
		return fmt.Errorf("shared file name %q: must be 1 to 1024 bytes", name)
	}
	for _, part := range strings.Split(name, "/") {
		if err := validName(part); err != nil {
			return fmt.Errorf("shared file name %q: %w", name, err)
		}
	}
	return nil
}

// encodeMetadata returns the content of a _metadata file: indented JSON,
// then a line "crc32c <8 hex digits>" with the CRC-32C of the JSON (its
// final newline included).
func encodeMetadata(m *Metadata) ([]byte, error) {
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	body = append(body, '\n')
	return fmt.Appendf(body, "%s%08x\n", trailerPrefix, crc32.Checksum(body, castagnoli)), nil
}

// decodeMetadata parses and validates the content of the _metadata file at
// path. Its errors are *CorruptError or *VersionError.
func decodeMetadata(path string, data []byte) (*Metadata, error) {
	if len(data) > maxMetadataSize {
		return nil, corruptf(path, "%d bytes, more than the %d a metadata file may have", len(data), maxMetadataSize)
	}
	n := len(data) - trailerLen
	if n < 1 || data[n-1] != '\n' || data[len(data)-1] != '\n' || !bytes.HasPrefix(data[n:], []byte(trailerPrefix)) {
		return nil, corruptf(path, "no crc32c checksum line at the end")
	}
	body := data[:n]
	var want Checksum
	if err := want.UnmarshalText(data[n+len(trailerPrefix) : len(data)-1]); err != nil {
		return nil, corruptf(path, "checksum line: %v", err)
	}
	if got := Checksum(crc32.Checksum(body, castagnoli)); got != want {
		return nil, corruptf(path, "checksum mismatch: content has crc32c %v, file says %v", got, want)
	}
	// The version first: a newer version may not decode as this one.
	var probe struct {
		Version *int `json:"format_version"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return nil, corruptf(path, "metadata does not parse: %v", err)
	}
	switch {
	case probe.Version == nil:
		return nil, corruptf(path, "no format_version")
	case *probe.Version > FormatVersion:
		return nil, &VersionError{Path: path, Version: *probe.Version}
	case *probe.Version < 1:
		return nil, corruptf(path, "format version %d", *probe.Version)
	}
	m := new(Metadata)
	if err := json.Unmarshal(body, m); err != nil {
		return nil, corruptf(path, "metadata does not parse: %v", err)
	}
	if err := m.validate(); err != nil {
		return nil, corruptf(path, "invalid metadata: %v", err)
	}
	// Hand back Extra compact, as callers wrote it, not indented as stored.
	for _, op := range m.Operators {
		for k, v := range op.Extra {
			var b bytes.Buffer
			if err := json.Compact(&b, v); err != nil {
				return nil, corruptf(path, "operator %q: extra %q: %v", op.UID, k, err)
			}
			op.Extra[k] = b.Bytes()
		}
	}
	return m, nil
}
