package cep

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
)

// Timeout is a partial match that Within timed out, from TimedOut.
type Timeout[K comparable, T any] struct {
	Key K
	// Pattern is the index of the pattern in DetectAll (0 for Detect).
	Pattern int
	// Match holds the events the partial match had taken.
	Match Match[T]
	// At is when it timed out: its first event's time plus the window.
	At time.Time
}

// Late is an event that arrived after the watermark had passed it, from
// LateEvents.
type Late[K comparable, T any] struct {
	Key       K
	Event     T
	Timestamp time.Time
}

const (
	envMatch uint8 = iota
	envTimeout
	envLate
)

// envelope carries Detect's output and side outputs on one stream; the
// public streams are views of it.
type envelope[K comparable, T, OUT any] struct {
	kind    uint8
	pattern int
	out     OUT
	key     K
	match   Match[T]
	ev      T
	ts      int64
}

// detection is what TimedOut and LateEvents find of a Detect.
type detection struct {
	mu       sync.Mutex
	all      any // *weir.Stream[envelope[K, T, OUT]]
	timedOut any
	late     any
	name     string
	timeouts atomic.Bool // TimedOut was asked for: materialize timeouts
	dropped  atomic.Int64
}

// detections maps the stream Detect returned to its detection.
var detections sync.Map // any(*weir.Stream[OUT]) -> *detection

// Detect runs the pattern over each key's events and calls fn for every
// match, emitting its result. Events are matched in event-time order: an
// event waits in keyed state until the watermark passes it, then the key's
// NFA consumes the events it passed in timestamp order (ties in arrival
// order), as Flink's CepOperator does. An event at or behind the
// watermark on arrival is late: dropped and counted, or sent to
// LateEvents. Matches are emitted in the order of their first events.
//
// The partial matches live in keyed state (heap or Pebble, as the job
// says) with a shared buffer that stores each event once; they are
// checkpointed by key group and restore at any parallelism. Within bounds
// them, and an event-time timer per key removes them when time passes the
// window, so idle keys keep no state.
//
// A malformed pattern fails the job when it starts, naming the stage.
func Detect[K comparable, T, OUT any](ks *weir.KeyedStream[K, T], p *Pattern[T], fn func(key K, m Match[T]) OUT, opts ...weir.OperatorOption) *weir.Stream[OUT] {
	return DetectAll(ks, []*Pattern[T]{p}, func(key K, _ int, m Match[T]) OUT { return fn(key, m) }, opts...)
}

// DetectNumbered is Detect whose fn also gets the match's number within
// its key: 1 for the key's first match, 2 for the next... (SQL's
// MATCH_NUMBER()). The count is keyed state, in checkpoints, one integer
// per key that ever matched.
func DetectNumbered[K comparable, T, OUT any](ks *weir.KeyedStream[K, T], p *Pattern[T], fn func(key K, n int64, m Match[T]) OUT, opts ...weir.OperatorOption) *weir.Stream[OUT] {
	return detectAll(ks, []*Pattern[T]{p}, nil, fn, opts...)
}

// DetectSteps is Detect whose fn gets the match as its events in the order
// they were taken, each with its stage (Match loses the order of the
// events of different stages, which groups and alternations interleave).
func DetectSteps[K comparable, T, OUT any](ks *weir.KeyedStream[K, T], p *Pattern[T], fn func(key K, s []Step[T]) OUT, opts ...weir.OperatorOption) *weir.Stream[OUT] {
	return detectSteps(ks, p, false, func(key K, _ int64, s []Step[T]) OUT { return fn(key, s) }, opts...)
}

// DetectStepsNumbered is DetectSteps whose fn also gets the match's number
// within its key, as DetectNumbered.
func DetectStepsNumbered[K comparable, T, OUT any](ks *weir.KeyedStream[K, T], p *Pattern[T], fn func(key K, n int64, s []Step[T]) OUT, opts ...weir.OperatorOption) *weir.Stream[OUT] {
	return detectSteps(ks, p, true, fn, opts...)
}

func detectSteps[K comparable, T, OUT any](ks *weir.KeyedStream[K, T], p *Pattern[T], numbered bool, fn func(key K, n int64, s []Step[T]) OUT, opts ...weir.OperatorOption) *weir.Stream[OUT] {
	return detectWith(ks, []*Pattern[T]{p}, func(f *detectFn[K, T, OUT]) {
		f.steps, f.countSteps = fn, numbered
	}, opts...)
}

// DetectAll runs several patterns over the same keyed stream in one
// operator: each event is buffered once per key and one timer per key
// serves every pattern, so many patterns cost little more than one. fn
// gets the index of the pattern that matched. Each pattern keeps its own
// skip strategy and window; the matches of one pattern are emitted in the
// order of their first events.
func DetectAll[K comparable, T, OUT any](ks *weir.KeyedStream[K, T], ps []*Pattern[T], fn func(key K, pattern int, m Match[T]) OUT, opts ...weir.OperatorOption) *weir.Stream[OUT] {
	return detectAll(ks, ps, fn, nil, opts...)
}

// detectAll is DetectAll, or DetectNumbered when numbered is set (one
// pattern).
func detectAll[K comparable, T, OUT any](ks *weir.KeyedStream[K, T], ps []*Pattern[T], fn func(key K, pattern int, m Match[T]) OUT, numbered func(key K, n int64, m Match[T]) OUT, opts ...weir.OperatorOption) *weir.Stream[OUT] {
	return detectWith(ks, ps, func(f *detectFn[K, T, OUT]) { f.fn, f.numbered = fn, numbered }, opts...)
}

// detectWith builds the operator; set gives each subtask's function its
// callback.
func detectWith[K comparable, T, OUT any](ks *weir.KeyedStream[K, T], ps []*Pattern[T], set func(*detectFn[K, T, OUT]), opts ...weir.OperatorOption) *weir.Stream[OUT] {
	d := &detection{}
	var nfas []*nfa[T]
	var errs []error
	for i, p := range ps {
		n, err := compile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("pattern %d: %w", i, err))
		}
		nfas = append(nfas, n)
	}
	if len(ps) == 0 {
		errs = append(errs, errors.New("cep: no pattern"))
	}
	err := errors.Join(errs...)
	all := weir.ProcessWith(ks, func() weir.KeyedProcessFunction[K, T, envelope[K, T, OUT]] {
		f := &detectFn[K, T, OUT]{nfas: nfas, err: err, d: d}
		set(f)
		return f
	}, append([]weir.OperatorOption{weir.Name("cep")}, opts...)...)
	d.all = all
	out := weir.FlatMap(all, func(e envelope[K, T, OUT], emit func(OUT)) {
		if e.kind == envMatch {
			emit(e.out)
		}
	})
	detections.Store(any(out), d)
	return out
}

func lookup[K comparable, T, OUT any](fnName string, s *weir.Stream[OUT]) (*detection, *weir.Stream[envelope[K, T, OUT]]) {
	v, ok := detections.Load(any(s))
	if !ok {
		panic(fmt.Sprintf("cep: %s: the stream is not the output of cep.Detect", fnName))
	}
	d := v.(*detection)
	all, ok := d.all.(*weir.Stream[envelope[K, T, OUT]])
	if !ok {
		panic(fmt.Sprintf("cep: %s[%T, %T]: the Detect's key or event type differs", fnName, *new(K), *new(T)))
	}
	return d, all
}

// TimedOut is the side output of the partial matches that Within timed
// out in the Detect that produced s (Flink's timed-out patterns). K and T
// are Detect's key and event types: cep.TimedOut[string, Txn](alerts).
func TimedOut[K comparable, T, OUT any](s *weir.Stream[OUT]) *weir.Stream[Timeout[K, T]] {
	d, all := lookup[K, T]("TimedOut", s)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timedOut == nil {
		d.timeouts.Store(true)
		d.timedOut = weir.FlatMap(all, func(e envelope[K, T, OUT], emit func(Timeout[K, T])) {
			if e.kind == envTimeout {
				emit(Timeout[K, T]{Key: e.key, Pattern: e.pattern, Match: e.match, At: time.UnixMilli(e.ts).UTC()})
			}
		})
	}
	return d.timedOut.(*weir.Stream[Timeout[K, T]])
}

// LateEvents is the side output of the events the Detect that produced s
// dropped as late.
func LateEvents[K comparable, T, OUT any](s *weir.Stream[OUT]) *weir.Stream[Late[K, T]] {
	d, all := lookup[K, T]("LateEvents", s)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.late == nil {
		d.late = weir.FlatMap(all, func(e envelope[K, T, OUT], emit func(Late[K, T])) {
			if e.kind == envLate {
				emit(Late[K, T]{Key: e.key, Event: e.ev, Timestamp: time.UnixMilli(e.ts).UTC()})
			}
		})
	}
	return d.late.(*weir.Stream[Late[K, T]])
}

// LateDropped is the number of late events the Detect that produced s has
// dropped so far, over all its subtasks (sent to LateEvents or not).
func LateDropped[OUT any](s *weir.Stream[OUT]) int64 {
	v, ok := detections.Load(any(s))
	if !ok {
		return 0
	}
	return v.(*detection).dropped.Load()
}

// detectFn is Detect's keyed process function, one per subtask.
type detectFn[K comparable, T, OUT any] struct {
	nfas []*nfa[T]
	err  error
	fn   func(K, int, Match[T]) OUT
	d    *detection
	// numbered, when set, replaces fn: it gets the key's match count,
	// kept in matches
	numbered func(K, int64, Match[T]) OUT
	matches  *weir.ValueState[K, int64]
	// steps, when set, replaces fn: it gets the match's events in order
	// (and its number when countSteps)
	steps      func(K, int64, []Step[T]) OUT
	countSteps bool

	st    *weir.ValueState[K, *keyState[T]]
	rs    []*runner[T]
	feed  feed[T]
	last  []int64 // per pattern: the time it was last advanced to in run
	ctx   *weir.KeyedContext[K, envelope[K, T, OUT]]
	inert bool // every pattern has an inert filter
	// inPlace: the state backend stores the *keyState itself, so changes
	// to a key's state need no Update (one hash lookup less per event).
	inPlace bool
	free    []*keyState[T] // states of keys that went idle, for reuse

	sw      sweep[K, T] // the keys with work, by time
	visitFn func([]wake[K, T])
	rebuilt bool  // the sweep holds the restored keys' appointments
	wm      int64 // the watermark being swept to
	in      T     // the event ProcessElement tests
	touch   uint32
}

func (f *detectFn[K, T, OUT]) Open(rc *weir.RuntimeContext[K]) error {
	if f.err != nil {
		return f.err
	}
	f.st = weir.NewValueState[*keyState[T]](rc, "cep-nfa")
	if f.numbered != nil || f.countSteps {
		f.matches = weir.NewValueState[int64](rc, "cep-match-number")
	}
	f.inPlace = rc.ValuesInPlace()
	f.visitFn = f.visitAll
	f.inert = true
	for i, n := range f.nfas {
		r := newRunner(n, &f.feed)
		r.timeouts = f.d.timeouts.Load()
		r.onMatch = func(m Match[T]) {
			key := f.ctx.Key()
			if f.numbered != nil {
				n, _ := f.matches.Value()
				n++
				f.matches.Update(n)
				f.ctx.Emit(envelope[K, T, OUT]{kind: envMatch, pattern: i, out: f.numbered(key, n, m)})
				return
			}
			f.ctx.Emit(envelope[K, T, OUT]{kind: envMatch, pattern: i, out: f.fn(key, i, m)})
		}
		if f.steps != nil {
			r.onSteps = func(s []Step[T]) {
				var n int64
				if f.countSteps {
					n, _ = f.matches.Value()
					n++
					f.matches.Update(n)
				}
				f.ctx.Emit(envelope[K, T, OUT]{kind: envMatch, pattern: i, out: f.steps(f.ctx.Key(), n, s)})
			}
		}
		r.onTimeout = func(m Match[T], at int64) {
			f.ctx.Emit(envelope[K, T, OUT]{kind: envTimeout, pattern: i, key: f.ctx.Key(), match: m, ts: at})
		}
		f.rs = append(f.rs, r)
		f.last = append(f.last, 0)
		f.inert = f.inert && n.inert != nil
	}
	return nil
}

// inertForAll reports an event that no pattern needs (see inertFilter).
func (f *detectFn[K, T, OUT]) inertForAll(in *T) bool {
	if !f.inert {
		return false
	}
	for _, n := range f.nfas {
		if !n.inert(in) {
			return false
		}
	}
	return true
}

func (f *detectFn[K, T, OUT]) newKeyState() *keyState[T] {
	if n := len(f.free); n > 0 {
		ks := f.free[n-1]
		f.free = f.free[:n-1]
		return ks
	}
	// One allocation for the state and its usual slices: a key's state is
	// then read with one or two cache misses, not one per slice.
	b := &keyBlock[T]{}
	ks := &b.ks
	ks.Timer = noTimer
	ks.Pend = b.pend[:0]
	if len(f.rs) == 1 {
		ks.NFA = b.nfa[:]
	} else {
		ks.NFA = make([]nfaState, len(f.rs))
	}
	return ks
}

// keyBlock is a key's state allocated with room for two buffered events
// and one pattern's automaton.
type keyBlock[T any] struct {
	ks   keyState[T]
	nfa  [1]nfaState
	pend [2]pendingEvent[T]
}

// recycle keeps the state of a key that went idle (and was cleared from
// the state backend) for the next key that needs one: most keys go idle
// after every event when few events start a match.
func (f *detectFn[K, T, OUT]) recycle(ks *keyState[T]) {
	if len(f.free) >= 1024 || len(ks.NFA) != len(f.rs) || len(ks.Buf.Events) > 64 {
		return
	}
	var zero T
	for i := range ks.Buf.Events {
		ks.Buf.Events[i].Ev = zero
	}
	b := &ks.Buf
	*b = sharedBuffer[T]{Events: b.Events[:0], Nodes: b.Nodes[:0], FreeEv: b.FreeEv[:0], FreeNode: b.FreeNode[:0]}
	clear(ks.Pend)
	ks.Pend = ks.Pend[:0]
	ks.Timer, ks.Seq = noTimer, 0
	ks.gen++ // the key's wakes in the sweep are stale
	f.free = append(f.free, ks)
}

func (f *detectFn[K, T, OUT]) idle(ks *keyState[T]) bool {
	if len(ks.Pend) > 0 {
		return false
	}
	for i := range ks.NFA {
		if !idle(&ks.NFA[i]) {
			return false
		}
	}
	return true
}

func (f *detectFn[K, T, OUT]) ProcessElement(ctx *weir.KeyedContext[K, envelope[K, T, OUT]], in T) error {
	ts := ctx.Timestamp().UnixMilli()
	if ts <= ctx.Watermark().UnixMilli() {
		f.d.dropped.Add(1)
		ctx.Emit(envelope[K, T, OUT]{kind: envLate, key: ctx.Key(), ev: in, ts: ts})
		return nil
	}
	// Through a field: &in would make every event escape to the heap
	// (the conditions are function values).
	f.in = in
	if f.inertForAll(&f.in) {
		return nil
	}
	ks, ok := f.st.Value()
	if !ok {
		ks = f.newKeyState()
	}
	ks.Pend = append(ks.Pend, pendingEvent[T]{TS: ts, Ev: in})
	if ks.Timer == noTimer || ts < ks.Timer {
		ks.Timer = ts
		f.wake(ctx.KeyRef(), ks)
	}
	if !ok || !f.inPlace {
		f.st.Update(ks)
	}
	return nil
}

// wake makes the key's appointment at ks.Timer with the sweep.
func (f *detectFn[K, T, OUT]) wake(ref weir.KeyRef[K], ks *keyState[T]) {
	w := wake[K, T]{ts: ks.Timer, ref: ref}
	if f.inPlace {
		w.ks, w.gen = ks, ks.gen
	}
	f.sw.push(w)
}

// OnWatermark sweeps the keys whose appointments the watermark reached:
// each runs its automata up to the watermark, as a timer of the key
// would (Flink's onEventTime), but without a timer per key.
func (f *detectFn[K, T, OUT]) OnWatermark(ctx *weir.KeyedContext[K, envelope[K, T, OUT]], wm time.Time) error {
	f.ctx = ctx
	if !f.rebuilt {
		f.rebuild(ctx)
	}
	f.wm = wm.UnixMilli()
	f.sw.advance(f.wm, f.visitFn)
	if testHookSwept != nil {
		n := 0
		for range f.st.Entries() {
			n++
		}
		testHookSwept(f.wm, n)
	}
	return nil
}

// testHookSwept, set by tests, gets the watermark and the number of keys
// in state after each sweep.
var testHookSwept func(wm int64, keys int)

// visitAll visits the wakes of one millisecond. It first reads the state
// of every key, so that the cache misses of the keys overlap rather than
// come one after another (with many keys, a key's state is rarely in the
// cache).
func (f *detectFn[K, T, OUT]) visitAll(ws []wake[K, T]) {
	var touch uint32
	for i := range ws {
		if ks := ws[i].ks; ks != nil {
			touch += ks.gen + uint32(len(ks.Pend))
			if len(ks.NFA) > 0 {
				touch += uint32(len(ks.NFA[0].Partial))
			}
		}
	}
	f.touch = touch
	for _, w := range ws {
		f.visit(w)
	}
}

// visit runs the key of a wake that is not stale.
func (f *detectFn[K, T, OUT]) visit(w wake[K, T]) {
	ks := w.ks
	if ks != nil && (ks.gen != w.gen || ks.Timer != w.ts) {
		return
	}
	f.ctx.SetKey(w.ref, time.UnixMilli(w.ts))
	if ks == nil {
		var ok bool
		if ks, ok = f.st.Value(); !ok || ks.Timer != w.ts {
			return
		}
	}
	f.runKey(ks, w.ref)
}

// runKey runs the current key's automata up to the watermark, then
// removes its state if it went idle or makes its next appointment.
func (f *detectFn[K, T, OUT]) runKey(ks *keyState[T], ref weir.KeyRef[K]) {
	ks.Timer = noTimer
	f.run(ks, f.wm)
	if f.idle(ks) {
		f.st.Clear()
		f.recycle(ks)
		return
	}
	if next := f.nextTimer(ks); next != noTimer {
		ks.Timer = next
		f.wake(ref, ks)
	}
	if !f.inPlace {
		f.st.Update(ks)
	}
}

// rebuild makes the appointments of the keys restored from a checkpoint
// (the sweep is not in checkpoints: it is derived from the keyed state).
// It runs before the first sweep; appointments made since by
// ProcessElement may be made twice, and the second is stale.
func (f *detectFn[K, T, OUT]) rebuild(ctx *weir.KeyedContext[K, envelope[K, T, OUT]]) {
	f.rebuilt = true
	var refs []weir.KeyRef[K]
	for ref, ks := range f.st.Entries() {
		if f.inPlace {
			if ks.Timer = f.nextTimer(ks); ks.Timer != noTimer {
				f.wake(ref, ks)
			}
			continue
		}
		refs = append(refs, ref)
	}
	// A copying backend: change each key's state after the iteration.
	for _, ref := range refs {
		ctx.SetKey(ref, ctx.Watermark())
		ks, ok := f.st.Value()
		if !ok {
			continue
		}
		if ks.Timer = f.nextTimer(ks); ks.Timer != noTimer {
			f.wake(ref, ks)
		}
		f.st.Update(ks)
	}
}

// OnTimer serves the event-time timers of checkpoints taken before Detect
// swept keys on the watermark: it runs the key as the sweep does.
func (f *detectFn[K, T, OUT]) OnTimer(ctx *weir.KeyedContext[K, envelope[K, T, OUT]], _ time.Time) error {
	ks, ok := f.st.Value()
	if !ok {
		return nil
	}
	f.ctx = ctx
	f.wm = ctx.Watermark().UnixMilli()
	f.runKey(ks, ctx.KeyRef())
	return nil
}

// run feeds the key's events up to wm to each pattern's automaton. An
// event is stored in the key's shared buffer at most once, on the first
// take by any pattern, and released once every pattern has seen it.
func (f *detectFn[K, T, OUT]) run(ks *keyState[T], wm int64) {
	if !slices.IsSortedFunc(ks.Pend, cmpPending[T]) {
		slices.SortStableFunc(ks.Pend, cmpPending[T])
	}
	if len(ks.NFA) != len(f.rs) {
		// A snapshot of another set of patterns cannot be matched up.
		ks.NFA = append(ks.NFA[:0], make([]nfaState, len(f.rs))...)
	}
	fd := &f.feed
	fd.buf = &ks.Buf
	for p := range f.last {
		f.last[p] = noTimer
	}
	n := 0
	for ; n < len(ks.Pend) && ks.Pend[n].TS <= wm; n++ {
		e := &ks.Pend[n]
		fd.curEv, fd.curID = -1, ks.Seq
		ks.Seq++
		for p, r := range f.rs {
			if inert := r.nfa.inert; inert != nil && inert(&e.Ev) {
				continue // the identity for this pattern
			}
			ns := &ks.NFA[p]
			if f.last[p] != e.TS {
				r.advanceTime(ns, e.TS)
				f.last[p] = e.TS
			}
			r.process(ns, &e.Ev, e.TS)
		}
		if fd.curEv >= 0 {
			ks.Buf.releaseEvent(fd.curEv) // the reference held while processing
		}
	}
	for p, r := range f.rs {
		r.advanceTime(&ks.NFA[p], wm)
	}
	if n == len(ks.Pend) {
		clear(ks.Pend)
		ks.Pend = ks.Pend[:0]
	} else {
		m := copy(ks.Pend, ks.Pend[n:])
		clear(ks.Pend[m:])
		ks.Pend = ks.Pend[:m]
	}
}

func cmpPending[T any](a, b pendingEvent[T]) int {
	switch {
	case a.TS < b.TS:
		return -1
	case a.TS > b.TS:
		return 1
	}
	return 0
}

// nextTimer is when the key needs its automata again: its earliest
// buffered event, or the time its earliest partial match times out.
func (f *detectFn[K, T, OUT]) nextTimer(ks *keyState[T]) int64 {
	next := int64(noTimer)
	for _, p := range ks.Pend {
		if next == noTimer || p.TS < next {
			next = p.TS
		}
	}
	for i, r := range f.rs {
		ns := &ks.NFA[i]
		if w := r.nfa.window; w > 0 && len(ns.Partial) > 0 {
			if t := ns.Partial[0].StartTS + w; next == noTimer || t < next {
				next = t
			}
		}
	}
	return next
}
