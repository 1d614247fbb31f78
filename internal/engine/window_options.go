package engine

import (
	"fmt"
	"time"
)

// AllowedLateness keeps a window's state for d after it fired (by the
// watermark): events that arrive in that time are still added and cause a
// corrected result (a late firing); only events later than that are dropped
// (and counted, and sent to LateEvents). Flink's allowedLateness.
func AllowedLateness(d time.Duration) WindowOption {
	return windowOpt{fmt.Sprintf("AllowedLateness(%v)", d), func(c *config) { c.lateness = d.Milliseconds() }}
}

// Trigger sets when a window emits its result (default: EventTimeTrigger).
func Trigger(t WindowTrigger) WindowOption {
	return windowOpt{"Trigger(" + t.String() + ")", func(c *config) { c.trigger = &t }}
}

// Accumulating makes every firing of a window after the first emit the
// window's new value as UpdateAfter (the default): a consumer keeping the
// latest value per window stays right.
func Accumulating() WindowOption {
	return windowOpt{"Accumulating()", func(c *config) { c.retract = false }}
}

// Retracting makes every firing of a window after the first emit
// UpdateBefore with the previous value, then UpdateAfter with the new one,
// so that a downstream sum (adding UpdateAfter and Insert, subtracting
// UpdateBefore and Delete) stays exact.
func Retracting() WindowOption {
	return windowOpt{"Retracting()", func(c *config) { c.retract = true }}
}

// applyWindowOptions applies the options of Window or of the window's
// aggregation (Aggregate, Reduce, ProcessWindow) to c.
func applyWindowOptions(c *config, opts []WindowOption) {
	for _, o := range opts {
		o.windowOption().fn(c)
	}
}
