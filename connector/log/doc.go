// Package wlog is weir's embedded log: Kafka-like topics of partitions
// stored in a local directory, with no server to run. (The directory is
// connector/log; the package is named wlog so as not to shadow the
// standard library's log.)
//
// # Layout
//
//	DATA-DIR/TOPIC/topic.json                        configuration (partitions, retention, compaction)
//	DATA-DIR/TOPIC/P/.lock                           flock of the partition's writer
//	DATA-DIR/TOPIC/P/00000000000000000000.log        segment, named by its base offset
//	DATA-DIR/TOPIC/P/00000000000000000000.index      sparse offset/time index of the segment
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
// *LockedError (errors.Is(err, ErrLocked)). Opening a writer scans the
// tail of the last segment and truncates a torn or corrupt tail (logged).
// Writer.Append assigns offsets; with SyncEveryBatch (the default) an
// acknowledged batch is fsynced and survives a crash. Segments roll at
// TopicConfig.SegmentBytes.
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
package wlog
