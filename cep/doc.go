// Package cep is complex event processing on weir: standing patterns over
// keyed streams, with Apache Flink CEP's semantics.
//
// A pattern is a sequence of named stages built with Begin and Next,
// FollowedBy, FollowedByAny, NotNext and NotFollowedBy; each stage has
// conditions (Where, Or, and WhereIter for conditions that look at the
// partial match so far), a quantifier (Times, TimesRange, TimesOrMore,
// OneOrMore, Optional, Greedy, Consecutive, AllowCombinations, Until) and
// the sequence a window (Within). Detect runs it over a keyed stream: each
// key's events, in event-time order, drive a non-deterministic automaton
// compiled the way Flink's NFACompiler compiles it, and every complete
// match is handed to a function as a Match (the events of each stage).
//
// The automaton's partial matches are keyed state: they are checkpointed
// with the job, restore at another parallelism, and live on the heap or
// in Pebble. Events are stored once per key however many partial matches
// hold them (Flink's shared buffer), and Within plus an event-time timer
// per key remove partial matches that can no longer complete, so keys that
// go quiet keep nothing.
//
// Side outputs: TimedOut gives the partial matches Within timed out, and
// LateEvents the events that arrived behind the watermark.
//
// docs/cep.md has a timeline picture of every operator and the skip
// strategies.
package cep
