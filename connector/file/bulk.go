package file

import (
	"io"
	"time"
)

// BulkWriter encodes the records of one part file in a bulk format, one
// that cannot be appended to record by record and read at any point
// (Parquet, ORC): it buffers and encodes records as it likes, and Finish
// writes what it holds and the format's trailer (Parquet's footer). As
// Flink's BulkWriter, a bulk part file is only ever complete at a
// checkpoint: an ExactlyOnce sink with a bulk format rolls its part files
// at every checkpoint (Flink's OnCheckpointRollingPolicy), so a part file
// never becomes visible half-written.
type BulkWriter[T any] interface {
	// Write encodes one record. The record and what it references are
	// only valid during the call.
	Write(v T) error
	// Finish writes what is buffered and the trailer to the writer the
	// BulkWriter was made with; it does not close it. No Write follows.
	Finish() error
}

// BulkFactory makes the BulkWriter of a new part file, writing to w (a
// buffered writer over the file). dir is the part file's directory
// relative to the sink's (its partition, "" when the sink is not
// partitioned), for a format that leaves the partition's columns out of
// its files.
type BulkFactory[T any] func(w io.Writer, dir string) (BulkWriter[T], error)

// Bulk makes an ExactlyOnce sink write its part files with a bulk format
// instead of one line per record. T must be the record type of the sink
// (opening the sink's writers fails otherwise); Bulk replaces Format.
func Bulk[T any](f BulkFactory[T]) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.bulk = f })
}

// Suffix gives the committed part files of an ExactlyOnce sink an
// extension ("part-0000000001-0000-0000.parquet"), which tools that look
// for files by extension (DuckDB's and Spark's globs) want.
func Suffix(s string) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.suffix = s })
}

// PartitionBy makes an ExactlyOnce sink write each record to the
// subdirectory of its directory that f names (a relative, local path, as
// filepath.IsLocal: "dt=2026-12-01/hour=10" for Hive-style partitions);
// an error of f, or a path that is not local, fails the write. The
// partition directories are created as needed. Each writer keeps one
// in-progress file per partition it has written to since the last
// checkpoint.
func PartitionBy[T any](f func(T) (string, error)) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.partition = f })
}

// PartitionTime makes PartitionCommit's trigger the watermark, as Flink's
// 'partition-time' trigger: a partition is committed (its success file
// written) at a completed checkpoint once the least watermark of the
// sink's writers at that checkpoint has reached its time plus the delay.
// partitionTime gives a partition's time from its directory name
// ("dt=2026-12-01/hour=10"); an error of it fails the commit. The writers
// learn the watermark as a weir.WatermarkWriter, and every writer answers
// every checkpoint (with its watermark) so that the committer knows the
// least of them; the end of a bounded input commits every partition.
func PartitionTime(partitionTime func(partition string) (time.Time, error)) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { c.partTime = partitionTime })
}

// PartitionCommit makes a partitioned ExactlyOnce sink mark its
// partitions complete with a success file, as Flink's filesystem sink
// does with 'sink.partition-commit.policy.kind' = 'success-file' and the
// 'process-time' trigger: once a checkpoint that wrote to a partition is
// complete, and delay has passed since the writer first wrote to it
// (since it last committed it), the committer creates the empty file
// name (Flink's "_SUCCESS") in the partition's directory, after renaming
// the part files of that checkpoint (after those of every subtask: the
// committer of the last committable of the checkpoint that still finds
// pending files of other subtasks leaves it to theirs). A partition
// written to again later
// is committed again (the success file is rewritten). now is the clock
// (nil: time.Now). After a restore, subtask 0 takes over the partitions
// that hold committed part files and no success file, as if first
// written at the restore.
func PartitionCommit(name string, delay time.Duration, now func() time.Time) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) {
		c.success, c.commitDelay, c.now = name, delay, now
	})
}
