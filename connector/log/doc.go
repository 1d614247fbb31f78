// Package wlog is weir's embedded log: Kafka-like topics of partitions
// stored in a local directory, with no server to run. (The directory is
// connector/log; the package is named wlog so as not to shadow the
// standard library's log.)
//
// # Layout
//
//	DATA-DIR/TOPIC/topic.json                        configuration (partitions, retention, compaction)
//	DATA-DIR/TOPIC/P/.lock                           flock of the partition's writer
//	DATA-DIR/TOPIC/P/recovery-point                  where the data is known fsynced (recovery.go)
//	DATA-DIR/TOPIC/P/00000000000000000000.log        segment, named by its base offset
//	DATA-DIR/TOPIC/P/00000000000000000000.index      sparse offset/time index of the segment
//	DATA-DIR/TOPIC/.txn/PRODUCER/                    output staged by the exactly-once Sink
//
// Records (offset, timestamp in ms, key, value, headers) are appended in
// batches; each batch is framed with its length and a CRC-32C (see
// record.go for the bytes). Every ~4 KiB of log the index gets an entry
// (relative offset, position, largest timestamp before it); the index is
// only a hint, checked against the log before use.
//
// # Writers and readers
//
// Topic.OpenWriter takes an exclusive flock on the partition, so there is
// one writer per partition across processes; a second one gets a
// *LockedError (errors.Is(err, ErrLocked)). Writer.Append assigns
// offsets; with SyncEveryBatch (the default) an acknowledged batch is
// fsynced and survives a crash. Segments roll at TopicConfig.SegmentBytes.
//
// # Damage
//
// After each fsync the writer records the partition's recovery point (the
// segment, byte and offset up to which data is on disk). Opening a writer
// scans the active segment and truncates a torn tail only past the
// recovery point (logged with the byte range); an invalid batch below it,
// or followed by a valid one, is a *CorruptError, and the writer refuses
// to open. Missing data is a *GapError: in a topic that is not compacted a
// segment must start where the one before it ended (and the first at 0
// without retention), and in any topic a closed segment is not empty and
// the last one holds the recovery point. Readers, Describe and OpenWriter
// all report both, naming topic, partition, segment and offsets; both
// match ErrCorrupt. A partition without a recovery point (written by
// older versions) treats invalid data at the end of its active segment as
// a torn tail, as those versions did.
//
// Topic.OpenReader takes no lock: any number of readers, in any process,
// start at Earliest, Latest, AtOffset or AtTimestamp. Read returns only
// complete batches whose CRC matches, so never a record being written;
// with Follow it waits for new records like tail -f, across segment rolls.
//
// # Retention and compaction
//
// Writer.Clean deletes whole closed segments by age (TopicConfig.Retention)
// and size (RetentionBytes) and, for a compacted topic, rewrites closed
// segments keeping only the latest record per key, dropping tombstones
// (nil values) after TombstoneRetention. Offsets never change; compaction
// leaves gaps.
//
// # Weir source and sink
//
// Source reads a topic in a job: a split per partition, the next offset of
// each in checkpoints, bounded (optionally at given offsets, StopAt) or
// following.
//
// Sink writes a job's output to a topic exactly once, with checkpoints (a
// weir.CommittingSink), by staging and idempotent appends:
//
//   - Write encodes each record (the user's record function: key, value,
//     timestamp, headers) into the open batch of its partition (key hash,
//     or Partitioner); full batches go to a staging file of the subtask,
//     DATA-DIR/TOPIC/.txn/PRODUCER-SUBTASK/. Nothing reaches the topic.
//   - PreCommit(n) closes the batches, fsyncs the staging file and renames
//     it to its pending name (with n); the committable (in the checkpoint)
//     names it, and the earlier pending files of the writer, with the last
//     batch index per partition.
//   - Commit, once checkpoint n is complete, appends the staged batches to
//     their partitions. Each carries a producer section: the producer id
//     (the sink's name and the subtask) and a sequence number (epoch,
//     checkpoint id, batch index) that grows with every batch the producer
//     commits. Before appending, the committer looks up the producer's last
//     sequence in the partition and skips every batch at or below it, so a
//     Commit repeated after a crash at any point, even halfway through,
//     appends each batch once. Then it fsyncs the partitions and deletes
//     the staging files; a repeated Commit whose file is gone checks that
//     the partition holds its last batch.
//   - Recover deletes staged files that no completed checkpoint covers.
//     The epoch is kept in the producer's directory: a job that restores a
//     checkpoint keeps it, a job started afresh takes one above any in the
//     topic, so its output is never taken for a replay of an earlier run.
//
// Only committed batches are ever appended, and each batch is atomic (one
// write(2), one CRC), so readers need nothing to see exactly-once output:
// no transaction markers, no read-committed mode.
//
// Several subtasks may write the same partition: only committers append,
// and they share the partition within a process (an in-process lock per
// partition, then the partition's writer, whose flock excludes other
// processes; a committer waits up to 10s for a writer of another process).
// The process keeps each partition's producer sequences, and a commit
// scans only what was appended since it last looked: the whole partition
// once per process, then the tail.
//
// A batch may hold, instead of the log's own records, one Kafka record
// batch (flags bit 1, kafka.go): Writer.AppendKafka appends a batch as a
// Kafka producer sent it (uncompressed), and Reader.ReadKafka hands such
// batches back as bytes, so that weir broker answers a fetch without
// decoding and encoding records. Every other reader decodes their records
// as any others; compaction rewrites them as the log's records. A version
// that predates the flag refuses to decode such batches (their framing
// and CRC are the same).
//
// The producer section is a batch flag (flags bit 0, then the section
// before the records). Segments written before it existed read unchanged;
// an older version's writers keep such batches (framing and CRC are the
// same) but its readers cannot decode them. Compaction keeps the section.
// Retention or compaction that deletes the last batch of a producer
// before a crash-and-restore makes its replay undetectable: keep retention
// well above the checkpoint interval.
//
// # The demo's data flow
//
// `weir demo adclicks` runs on this log by default: a producer goroutine
// appends the deterministic click stream to topic clicks (one partition;
// click i at offset i, so after a crash it resumes where the topic ends
// and writes nothing when the topic already holds the stream); the job
// reads clicks (StopAt the --events-th, following while the producer
// writes), counts clicks per ad and minute, and writes the results to topic
// click-counts through Sink, and with --output to part files through
// connector/file.ExactlyOnce. Killed and restarted with the same flags,
// both hold exactly the output of an uninterrupted run
// (internal/testing/crashtest).
package wlog
