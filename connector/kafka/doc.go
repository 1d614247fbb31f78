// Package kafka connects weir jobs to Apache Kafka through
// github.com/twmb/franz-go: a Source with a split per topic-partition and
// offsets in the job's checkpoints, and a Sink that is at-least-once or,
// with Kafka transactions committed when checkpoints complete, exactly once.
//
// # Source
//
// Source(brokers, topics, decode, opts...) enumerates the partitions of the
// topics when the job starts; each is a split, so each gets its own
// watermark generator, and the job's watermark is the minimum over
// partitions. Without a checkpoint a partition starts at Earliest(),
// Latest(), AtTime(t) or the Committed(fallback) offsets of a Group; with
// one, at the offset the checkpoint saved. Bounded() stops at the end
// offsets seen at start. One franz-go client per source and process
// fetches for all of its open partitions; readers take their partition's
// records in batches.
//
// # Sink
//
// Sink(brokers, serialize, opts...) produces with the Guarantee of
// DeliveryGuarantee: None, AtLeastOnce (flush at every checkpoint barrier,
// the default) or ExactlyOnce (a transaction per subtask and checkpoint,
// pre-committed at the barrier and committed when the checkpoint is
// complete; see Sink for the transactional ids and recovery).
//
// # Connections
//
// SASL, TLS, ClientID, RetryTimeout and ClientOptions apply to every client
// of a source or sink. Brokers that cannot be reached are retried with
// backoff (requests for up to RetryTimeout, fetches and produces until the
// job gives up); a job whose connector fails restarts under its restart
// policy from its latest checkpoint.
package kafka
