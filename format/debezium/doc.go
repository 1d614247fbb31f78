// Package debezium reads and writes Debezium's JSON change events, so that
// weir takes part in pipelines fed by Debezium connectors (through Kafka
// or the embedded log) and feeds consumers that expect them.
//
// A Debezium event describes one row change: the row before and after it,
// the operation (c create, u update, d delete, r read during a snapshot),
// where it came from (source) and when it was processed (ts_ms). Debezium
// sends it either bare or wrapped as {"schema": ..., "payload": ...} when
// the JSON converter has schemas enabled; Decode takes both. A delete is
// followed in Kafka by a tombstone (a record without a value), which
// Decode turns into an empty Event (Op "") that yields no change.
//
// In weir a changelog is a stream of weir.Change[T]: Event.Changes maps
// an event to its changes (c and r to Insert, u to UpdateBefore and
// UpdateAfter, or UpdateAfter alone when the source sent no before-image,
// d to Delete), and Encoder maps changes back to events, pairing an
// UpdateBefore with the UpdateAfter that follows it.
package debezium
