// Package checkpoint stores checkpoints and savepoints on disk: the state
// files that operators' snapshots are written to, and the metadata that
// makes a set of files a checkpoint. It does not run the checkpoint
// protocol (barriers, alignment, acknowledgements, sink commits): the
// coordinator does, and uses this package to write what the tasks produce
// and to find what to restore.
//
// # Layout
//
// A checkpoint directory holds one directory per checkpoint:
//
//	DIR/
//	  chk-0000000041/              complete: has _metadata
//	    _metadata
//	    window-3.kg-0-32           state files, named by their writers
//	    source-1.offsets
//	  chk-0000000042.inprogress/   being written, or left by a crash
//	  savepoint-40-1767225600/     a savepoint: id, then unix seconds
//
// A savepoint has the same contents as a checkpoint. It is written to DIR
// (Store.Begin with KindSavepoint) or to a directory the user names
// (Store.BeginSavepointAt).
//
// # Commit protocol
//
// A checkpoint is complete only once its directory has its final name and
// holds a valid _metadata file; a directory without one is never used. A
// Pending checkpoint is written in <name>.inprogress:
//
//  1. Each state file is written through a FileWriter, which computes its
//     size and CRC-32C as the bytes stream by, and is fsynced on Close.
//  2. Commit writes _metadata.tmp, fsyncs it, and renames it to _metadata;
//     then it fsyncs the directory, which makes the names of the state
//     files and of _metadata durable.
//  3. Commit renames the directory to its final name and fsyncs DIR.
//  4. For a checkpoint, those older than the newest Retain valid ones are
//     deleted. Savepoints are never deleted.
//
// A crash before step 3 leaves an .inprogress directory, which Open
// removes; after it, a complete checkpoint.
//
// On object storage (a file system whose files appear whole when closed
// and whose renames copy: internal/s3fs) a checkpoint of the store is
// written in place instead, as Flink writes to S3: in its final
// directory from the start; Commit writes the metadata's copy and then
// _metadata there (no rename), and the checkpoint is complete once either
// is whole. A directory with neither is in progress (or a crash's
// leftover, which Open removes). Shared files and commit records are
// written under their final names; a savepoint at a path the user names
// is still written beside it and renamed. If Commit fails it removes what
// it wrote (including the final directory, if fsyncing DIR failed), so the
// store holds what it held before and Latest returns what it did before.
//
// # Format
//
// _metadata is JSON, then one line with the CRC-32C of the JSON (its last
// newline included), so that a flipped bit anywhere is detected:
//
//	{
//	  "format_version": 1,
//	  "checkpoint_id": 41,
//	  "kind": "checkpoint",
//	  "job_name": "adclicks",
//	  "created": "2026-01-01T00:00:00Z",
//	  "job_options": {"parallelism": "4"},
//	  "max_parallelism": 128,
//	  "operators": [{
//	    "uid": "window-3", "name": "Window", "parallelism": 4,
//	    "files": [{"name": "window-3.kg-0-32", "size": 5120, "crc32c": "1a2b3c4d",
//	               "subtask": 0, "key_groups": {"start": 0, "end": 32}}],
//	    "extra": {"watermark": 1767225600000}
//	  }]
//	}
//	crc32c 0badc0de
//
// That envelope stays the same in every format version, so a file from a
// newer version is reported as such (*VersionError), not as corrupt. State
// files are opaque here; each one's size and CRC-32C are listed in
// _metadata and checked when it is read to the end (Checkpoint.Open,
// ReadFile) or by Checkpoint.Verify.
//
// # Validation and fallback
//
// Store.Latest takes the newest checkpoint or savepoint (by id) whose
// _metadata parses, has a matching CRC and a supported version, and whose
// files all exist with their listed sizes. An unusable one is logged and
// skipped for the previous one; an I/O error is returned instead, since
// rewinding further than needed on a transient error would replay output
// for nothing. Reading state files in full is left to the restore, which
// reads them anyway; with the VerifyContents option Latest reads them too,
// so that a flipped bit in a state file also makes it fall back.
//
// Ids order checkpoints: Begin refuses an id not greater than every id in
// the directory (Store.NextID gives one), and Commit refuses a checkpoint
// that a newer one completed before (ErrSubsumed).
//
// # Faults
//
// All I/O goes through an FS. FaultFS wraps one and fails chosen
// operations, or simulates a full disk, to test that a failed checkpoint
// leaves the previous ones usable.
package checkpoint
