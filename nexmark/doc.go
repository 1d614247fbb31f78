// Package nexmark is the Nexmark benchmark on weir: an event generator that
// follows the reference generator of the nexmark/nexmark project (Flink)
// and Beam's Nexmark suite, JSON lines of its events, and the queries,
// each a function that builds a weir pipeline with the public API the way
// a user would:
//
//	job := weir.NewJob("q5", weir.Parallelism(2))
//	events := nexmark.Events(job, nexmark.Source(nexmark.GeneratorConfig{Events: 1e7, Splits: 2}))
//	hot := nexmark.Q5(events) // *weir.Stream[nexmark.Q5Row]
//	out := weir.Collect(hot)
//	err := job.Run(ctx)
//
// Event n is a pure function of the seed and n (1 person, 3 auctions and 46
// bids in every 50 event numbers), so the source splits the event numbers
// over subtasks and any split count gives the same events. Events carry
// date_time in epoch milliseconds; the watermark is the Flink DDL's, 4 s of
// bounded out-of-orderness (Watermarks).
//
// The queries follow the Flink SQL versions in nexmark/nexmark
// (nexmark-flink/src/main/resources/queries); each query's doc comment
// says how it is built and which choices it makes. Their rows write
// themselves as JSON objects keyed by the SQL's output columns in lower
// case (Row). The updating queries (q4, q9, q17: aggregates and ranks
// without windows) return a changelog (*weir.Stream[weir.Change[Row]]);
// their answer is its upsert view by the query's key (UpsertView).
// docs/nexmark.md has the list, the commands and the figures.
package nexmark
