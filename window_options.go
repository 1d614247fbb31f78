package weir

import (
	"time"

	"github.com/weirstream/weir/internal/engine"
)

// WindowOption configures a window operator: Window, Aggregate, Reduce,
// ProcessWindow, CoGroup and WindowJoin take it. AllowedLateness, Trigger,
// Accumulating and Retracting are window options, and so is every
// OperatorOption.
type WindowOption = engine.WindowOption

// AllowedLateness keeps a window's state for d after it fired (by the
// watermark): events that arrive in that time are still added and cause a
// corrected result (a late firing); only events later than that are dropped
// (and counted, and sent to LateEvents). Flink's allowedLateness.
func AllowedLateness(d time.Duration) WindowOption {
	return engine.AllowedLateness(d)
}

// Trigger sets when a window emits its result (default: EventTimeTrigger).
func Trigger(t WindowTrigger) WindowOption {
	return engine.Trigger(t)
}

// Accumulating makes every firing of a window after the first emit the
// window's new value as UpdateAfter (the default): a consumer keeping the
// latest value per window stays right.
func Accumulating() WindowOption {
	return engine.Accumulating()
}

// Retracting makes every firing of a window after the first emit
// UpdateBefore with the previous value, then UpdateAfter with the new one,
// so that a downstream sum (adding UpdateAfter and Insert, subtracting
// UpdateBefore and Delete) stays exact.
func Retracting() WindowOption {
	return engine.Retracting()
}
