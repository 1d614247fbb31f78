package engine

import (
	"fmt"
	"time"
)

// Windows describes how a keyed stream is cut into windows. Build one with
// Tumbling or Hopping.
//
// A window [start, end) holds events with start <= t < end and fires when
// the watermark reaches end-1 (Flink's window.maxTimestamp()). Window
// boundaries are aligned to the epoch (plus an optional offset), so
// Tumbling(time.Minute) windows start on the minute, as in Flink and Beam.
type Windows struct {
	kind   windowKind
	size   int64 // ms
	slide  int64 // ms; == size for tumbling
	offset int64 // ms, in [0, slide)
	err    error
}

type windowKind uint8

const (
	tumblingWindows windowKind = iota + 1
	hoppingWindows
	sessionWindows
	globalWindows
	slidingWindows
)

// Tumbling windows of a fixed size that do not overlap: [k·size, (k+1)·size).
// Flink: TumblingEventTimeWindows; Beam: FixedWindows.
func Tumbling(size time.Duration) Windows {
	w := Windows{kind: tumblingWindows, size: size.Milliseconds(), slide: size.Milliseconds()}
	if w.size <= 0 {
		w.err = fmt.Errorf("weir: Tumbling(%v): size must be at least 1ms", size)
	}
	return w
}

// Hopping windows of a fixed size that start every slide; an event belongs
// to ⌈size/slide⌉ windows. Flink: SlidingEventTimeWindows; Beam:
// SlidingWindows.
func Hopping(size, slide time.Duration) Windows {
	w := Windows{kind: hoppingWindows, size: size.Milliseconds(), slide: slide.Milliseconds()}
	switch {
	case w.size <= 0 || w.slide <= 0:
		w.err = fmt.Errorf("weir: Hopping(%v, %v): size and slide must be at least 1ms", size, slide)
	case w.slide > w.size:
		// Flink allows gaps between windows; so do we, but it is almost
		// always a mistake worth knowing about at build time.
		w.err = fmt.Errorf("weir: Hopping(%v, %v): slide larger than size leaves gaps (use a smaller slide)", size, slide)
	}
	return w
}

// WithOffset shifts tumbling or hopping window boundaries by d (for example, one-day windows
// starting at 08:00 UTC, or hourly windows in a time zone off the hour).
// Like Flink, the offset is taken modulo the slide.
func (w Windows) WithOffset(d time.Duration) Windows {
	if w.kind != tumblingWindows && w.kind != hoppingWindows {
		w.err = fmt.Errorf("weir: %v: WithOffset applies to Tumbling and Hopping windows", w)
		return w
	}
	o := d.Milliseconds() % w.slide
	if o < 0 {
		o += w.slide
	}
	w.offset = o
	return w
}

// Session windows per key: each event opens [t, t+gap); windows of the same
// key that overlap or touch merge, so events up to and including gap apart
// share a session (Flink's merging rule). Aggregates merge their
// accumulators. Flink: EventTimeSessionWindows; Beam: Sessions.
func Session(gap time.Duration) Windows {
	w := Windows{kind: sessionWindows, size: gap.Milliseconds(), slide: 1}
	if w.size <= 0 {
		w.err = fmt.Errorf("weir: Session(%v): gap must be at least 1ms", gap)
	}
	return w
}

// Global puts all of a key's events in one window that never ends. It fires
// only by its trigger (CountTrigger, ProcessingTimeTrigger, early firings)
// and at the end of a bounded input. Flink: GlobalWindows; Beam:
// GlobalWindows.
func Global() Windows { return Windows{kind: globalWindows, slide: 1} }

// Sliding windows have no fixed edges: for each event at t, the window is
// the same key's events in (t-d, t], and its result is emitted once the
// watermark passes t, as a WindowResult whose End is t and Start is t-d.
// An event later than the watermark is dropped. This is SQL's OVER (RANGE
// BETWEEN d PRECEDING AND CURRENT ROW), Flink's over window; Beam has no
// direct equivalent.
func Sliding(d time.Duration) Windows {
	w := Windows{kind: slidingWindows, size: d.Milliseconds(), slide: 1}
	if w.size <= 0 {
		w.err = fmt.Errorf("weir: Sliding(%v): range must be at least 1ms", d)
	}
	return w
}

func (w Windows) String() string {
	switch w.kind {
	case slidingWindows:
		return fmt.Sprintf("Sliding(%v)", time.Duration(w.size)*time.Millisecond)
	case sessionWindows:
		return fmt.Sprintf("Session(%v)", time.Duration(w.size)*time.Millisecond)
	case globalWindows:
		return "Global()"
	case tumblingWindows:
		return fmt.Sprintf("Tumbling(%v, offset %v)", time.Duration(w.size)*time.Millisecond, time.Duration(w.offset)*time.Millisecond)
	case hoppingWindows:
		return fmt.Sprintf("Hopping(%v, %v, offset %v)", time.Duration(w.size)*time.Millisecond, time.Duration(w.slide)*time.Millisecond, time.Duration(w.offset)*time.Millisecond)
	}
	return "Windows(invalid)"
}

// lastStart is the start of the latest window containing ts: the largest
// offset + k·slide <= ts. Floor division, so negative timestamps work.
func (w *Windows) lastStart(ts int64) int64 {
	r := (ts - w.offset) % w.slide
	if r < 0 {
		r += w.slide
	}
	return ts - r
}

// ChangeKind says what a result row means to a consumer that keeps a view of
// the results, like Flink's RowKind.
type ChangeKind uint8

const (
	// Insert is a new result.
	Insert ChangeKind = iota
	// UpdateBefore retracts a result emitted earlier.
	UpdateBefore
	// UpdateAfter is the new value of a result emitted earlier.
	UpdateAfter
	// Delete removes a result emitted earlier.
	Delete
)

func (k ChangeKind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return fmt.Sprintf("ChangeKind(%d)", uint8(k))
}

// WindowResult is the result of one window for one key.
type WindowResult[K comparable, V any] struct {
	Key   K
	Start time.Time // inclusive
	End   time.Time // exclusive
	Value V
	Kind  ChangeKind
}

// WindowedStream is a keyed stream cut into windows; aggregate it with
// Aggregate or Reduce.
type WindowedStream[K comparable, T any] struct {
	ks  *KeyedStream[K, T]
	w   Windows
	cfg config
}

// Window cuts a keyed stream into windows.
func Window[K comparable, T any](ks *KeyedStream[K, T], w Windows, opts ...WindowOption) *WindowedStream[K, T] {
	j := ks.src.job
	cfg := config{}
	applyWindowOptions(&cfg, opts)
	if w.kind == 0 {
		j.fail(fmt.Errorf("weir: Window: zero Windows value (use Tumbling, Hopping, Session, Sliding or Global)"))
	} else if w.err != nil {
		j.fail(w.err)
	}
	return &WindowedStream[K, T]{ks: ks, w: w, cfg: cfg}
}

// WindowTrigger says when a window emits its result. Build one with
// EventTimeTrigger, ProcessingTimeTrigger or CountTrigger and pass it to
// Window with the Trigger option.
type WindowTrigger struct {
	kind  triggerKind
	count int64
	early int64 // ms of processing time between early firings; 0: none
	late  int64 // ms of processing time between late firings; 0: on every late event
	purge bool
}

type triggerKind uint8

const (
	eventTimeTrigger triggerKind = iota
	processingTimeTrigger
	countTrigger
)

// EventTimeTrigger fires a window when the watermark reaches its end-1 (the
// default). With AllowedLateness, each late event that is still accepted
// fires the window again (Flink's EventTimeTrigger), or, with
// WithLateFirings, the late events are gathered and fired every interval.
func EventTimeTrigger() WindowTrigger { return WindowTrigger{kind: eventTimeTrigger} }

// ProcessingTimeTrigger fires a window when the processing time (the job's
// clock) reaches the window's end-1, then discards its state: use it with
// NoWatermarks, whose timestamps are ingestion times, for processing-time
// windows. Unlike Flink, windows still pending fire at the end of a bounded
// input.
func ProcessingTimeTrigger() WindowTrigger {
	return WindowTrigger{kind: processingTimeTrigger, purge: true}
}

// CountTrigger fires a window every n events added to it. Unlike Flink, a
// window with events not yet fired fires at the end of a bounded input.
func CountTrigger(n int64) WindowTrigger { return WindowTrigger{kind: countTrigger, count: n} }

// WithEarlyFirings adds speculative firings every d of processing time while
// an event-time window is still open and has changed since it last fired
// (Beam's AfterWatermark().withEarlyFirings, Flink's
// ContinuousProcessingTimeTrigger): the first result comes before the
// watermark, and the on-time firing corrects it.
func (t WindowTrigger) WithEarlyFirings(d time.Duration) WindowTrigger {
	t.early = max(1, d.Milliseconds())
	return t
}

// WithLateFirings gathers the late events of a fired window (within
// AllowedLateness) and fires once per d of processing time instead of once
// per late event.
func (t WindowTrigger) WithLateFirings(d time.Duration) WindowTrigger {
	t.late = max(1, d.Milliseconds())
	return t
}

// Purging discards a window's state each time it fires: each firing then
// covers only the events since the previous one, emitted as Insert (a new
// pane), as with Flink's PurgingTrigger (countWindow).
func (t WindowTrigger) Purging() WindowTrigger {
	t.purge = true
	return t
}

func (t WindowTrigger) String() string {
	s := ""
	switch t.kind {
	case eventTimeTrigger:
		s = "EventTimeTrigger()"
	case processingTimeTrigger:
		s = "ProcessingTimeTrigger()"
	case countTrigger:
		s = fmt.Sprintf("CountTrigger(%d)", t.count)
	}
	if t.early > 0 {
		s += fmt.Sprintf(".WithEarlyFirings(%v)", time.Duration(t.early)*time.Millisecond)
	}
	if t.late > 0 {
		s += fmt.Sprintf(".WithLateFirings(%v)", time.Duration(t.late)*time.Millisecond)
	}
	if t.purge && t.kind != processingTimeTrigger {
		s += ".Purging()"
	}
	return s
}

func (t WindowTrigger) validate() error {
	switch {
	case t.kind == countTrigger && t.count < 1:
		return fmt.Errorf("weir: CountTrigger(%d): count must be at least 1", t.count)
	case t.kind != eventTimeTrigger && (t.early > 0 || t.late > 0):
		return fmt.Errorf("weir: %v: early and late firings apply to EventTimeTrigger", t)
	}
	return nil
}

// WindowInfo is the bounds of a window, for ProcessWindow.
type WindowInfo struct {
	Start time.Time // inclusive
	End   time.Time // exclusive
}

// LateEvent is an event dropped by a windowed operator because every window
// it belongs to had fired and passed its allowed lateness.
type LateEvent[K comparable, T any] struct {
	Key       K
	Value     T
	Timestamp time.Time
	// Window is the latest window the event missed.
	Window WindowInfo
	// Watermark is the operator's watermark when the event arrived.
	Watermark time.Time
}
