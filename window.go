package weir

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

// WithOffset shifts window boundaries by d (for example, one-day windows
// starting at 08:00 UTC, or hourly windows in a time zone off the hour).
// Like Flink, the offset is taken modulo the slide.
func (w Windows) WithOffset(d time.Duration) Windows {
	o := d.Milliseconds() % w.slide
	if o < 0 {
		o += w.slide
	}
	w.offset = o
	return w
}

func (w Windows) String() string {
	switch w.kind {
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
func Window[K comparable, T any](ks *KeyedStream[K, T], w Windows, opts ...Option) *WindowedStream[K, T] {
	j := ks.src.job
	cfg := j.opConfig("Window", scopeOp, opts)
	if w.kind == 0 {
		j.fail(fmt.Errorf("weir: Window: zero Windows value (use Tumbling or Hopping)"))
	} else if w.err != nil {
		j.fail(w.err)
	}
	return &WindowedStream[K, T]{ks: ks, w: w, cfg: cfg}
}
