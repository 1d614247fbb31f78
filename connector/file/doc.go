// Package file connects weir jobs to local files: JSON Lines and CSV
// sources, an exactly-once sink writing part files to a directory, a JSON
// Lines sink, and sinks printing lines to stdout or any io.Writer.
//
// # Sources and splits
//
// JSONLines and CSV read a list of files. Each file is one split, whose ID
// is its path cleaned by filepath.Clean; the job spreads the splits over the
// source's subtasks (split i to subtask i mod p), so a source never runs at
// a parallelism above its number of files, and records of one file keep
// their order. Every split's file is opened (and held open) when the job
// starts; a file that does not exist fails the job then, with an error
// naming it.
//
// Files are read through a 256 KiB buffer, a batch of records per call;
// lines are decoded where they lie in the buffer. A JSON Lines record is one
// line, decoded with encoding/json; blank lines are skipped. A CSV record is
// one line, or several when a quoted field holds line breaks; empty lines
// are skipped and Header(true) skips each file's first record. The reader
// of a split (a *Reader) tracks the line number and byte offset of every
// record; Offset is the byte offset of the next unread line.
//
// # Follow mode
//
// By default a source is bounded: each split ends at the end of its file,
// and the job ends when all inputs are done. With Follow(pollInterval) the
// source keeps reading its files as they grow, like tail -f, looking for
// new data once per poll interval. A last line without its terminating '\n'
// is not decoded until the '\n' arrives, so a record that is being written
// is never read half-written. A file that shrinks (truncated, as by
// logrotate's copytruncate) is read again from its start; files that are
// renamed or replaced are not reopened. Such a job runs until its context is
// cancelled.
//
// # Bad records
//
// A record that cannot be decoded (invalid JSON, a CSV syntax error, or an
// error of the CSV parse function) fails the job with a *RecordError naming
// the file, the line and the byte offset of the record, for example
//
//	file: clicks.jsonl:17 (byte offset 1234): invalid character 'x' looking for beginning of value
//
// The records before it are still delivered. Find it in the job's error
// with errors.As. With SkipBadRecords, bad records are skipped and counted
// instead: see Reader.Skipped and the job's weir_bad_records_skipped_total
// metric.
//
// # Exactly-once sink
//
// ExactlyOnce is a two-phase-commit sink (weir.CommittingSink), modelled on
// Flink's FileSink: each subtask writes JSON Lines (or what Format makes of
// a record) to a hidden in-progress file in the sink's directory; at each
// checkpoint the file is closed, fsynced and renamed to a hidden pending
// file, and when the checkpoint is complete the sink's committer renames it
// to its final, visible name:
//
//	.part-<subtask>-<writer>-<n>.inprogress          being written
//	.part-<ckpt>-<subtask>-<seq>.<writer>.pending    pre-committed
//	part-<ckpt>-<subtask>-<seq>                      committed
//
// The checkpoint id is padded to 10 digits and the subtask and sequence
// numbers to 4, so that concatenating the committed files in name order
// gives each record once, checkpoint after checkpoint. RollSize starts a new
// part file within a checkpoint once one is large. After a crash the job
// commits the restored checkpoint's output again (Commit is idempotent) and
// each writer's Recover deletes the hidden files of earlier attempts that
// the restored checkpoint does not cover: in-progress files, and pending
// files of later checkpoints, whose records the job writes again. A writer
// cleans up after its own subtask index, and subtask 0 also after indexes
// at or above the parallelism, so that a job restored at a lower
// parallelism leaves nothing behind and subtasks never delete each other's
// files. Without checkpointing the output is committed once, when the
// bounded input ends. Readers that skip dot files see committed output only.
// See ExactlyOnce for the exact rules.
//
// Bulk formats (Parquet) go through Bulk: a BulkWriter encodes a part
// file's records as it likes and writes its trailer at PreCommit, so a
// bulk part file is complete before it is even pending (Flink's
// BulkWriter with OnCheckpointRollingPolicy). Suffix names the committed
// files' extension. PartitionBy writes each record under a subdirectory
// (a Hive-style partition), with one in-progress file per partition and
// the same hidden names inside it; Recover then walks the partition
// directories too. PartitionCommit writes a success file into each
// partition once a checkpoint that wrote to it has been committed and a
// delay has passed (Flink's success-file policy with the process-time
// trigger).
//
// # Object storage
//
// ExactlyOnce's directory may be `s3://bucket/prefix` (AWS S3 or an
// S3-compatible store, configured from the usual AWS environment as
// checkpoint directories are: docs/operations.md). S3 has no rename, so
// the sink does what Flink's S3 writer does: a writer spools its
// in-progress part files to unlinked local files (os.TempDir), PreCommit
// uploads each as a multipart upload of its final key without completing
// it (the upload id and part ETags go in the committable), and Commit
// completes the uploads, at which moment each object appears whole. The
// same names, numbering, idempotence and errors hold (an object in the
// way is not overwritten; a lost upload fails for good); Recover aborts
// the open uploads a local Recover would delete as pending files, and
// partition success files are objects written at commit. Uploads that
// no rule reaches (a job abandoned for good) are for the bucket's
// lifecycle rule on incomplete multipart uploads, as with Flink.
// JSONLines and CSV take s3:// objects among their paths: an object is
// read as a stream, and a restored reader resumes with a ranged read
// from the checkpointed offset (Follow is refused: objects do not grow).
//
// # Other sinks
//
// JSONLinesSink writes one JSON value per line to a file, buffered, and
// flushes and fsyncs it when the sink closes. At parallelism 1 it writes to
// the path it was given; at parallelism p > 1, subtask i writes to its own
// file, named by inserting "-i" before the path's extension: out.jsonl
// becomes out-0.jsonl, out-1.jsonl, ... Stdout and Writer print one line per
// record (fmt.Sprint of the record unless a format function is given),
// serializing the writes of their subtasks so that lines never interleave.
package file
