// Package weir is a stateful stream processor: event time, watermarks,
// windows, keyed state and timers on a parallel, batched runtime, with
// Apache Flink's semantics.
//
// A job is a graph built with package functions that take the stream first
// (Go methods cannot add type parameters):
//
//	job := weir.NewJob("ad-clicks", weir.Parallelism(2))
//	clicks := weir.FromSource(job, "clicks", src,
//		weir.BoundedOutOfOrderness(5*time.Second, func(c Click) time.Time { return c.TS }))
//	perAd := weir.KeyBy(clicks, func(c Click) string { return c.AdID })
//	counts := weir.Aggregate(weir.Window(perAd, weir.Tumbling(time.Minute)), weir.Count[Click]())
//	weir.To(counts, sink)
//	err := job.Run(ctx)
//
// # Time
//
// Event time is the default. Inside weir a timestamp is int64 milliseconds
// since the Unix epoch (Flink's unit); the API speaks time.Time and
// time.Duration. A watermark W asserts that no event with timestamp <= W
// will follow. BoundedOutOfOrderness(d) emits W = max event time seen - d -
// 1ms, per source split; an operator's watermark is the minimum over its
// inputs. Watermarks travel in-band with the records: each record carries
// the watermark in effect before it, so results do not depend on how the
// stream was cut into batches, on the parallelism, or on timing. The end of
// a bounded input is the maximal watermark: every window and timer fires.
//
// # Windows
//
// A window [start, end) fires when the watermark reaches end-1. An event
// whose windows all fired is dropped and counted in the metric
// late_records_dropped_total.
//
// # Runtime
//
// Operators joined by forward edges at equal parallelism run chained in one
// goroutine with plain calls. Other edges are bounded queues of record
// batches between tasks (a full queue blocks its sender: backpressure).
// Keyed edges route by key group (hash mod max parallelism) with a hash
// that is the same in every process. See docs/architecture.md.
package weir
