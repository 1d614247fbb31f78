// Package exec holds the untyped machinery of a running job: input gates
// (bounded per-channel queues between tasks) and the task group that runs
// one goroutine per task, turns panics into errors and cancels every task
// when one fails.
//
// Nothing here knows the record types; batches travel as opaque values and
// the typed operators in package weir assert them back once per batch.
package exec
