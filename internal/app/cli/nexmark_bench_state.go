package cli

import (
	"math"
	"sort"

	"github.com/weirstream/weir"
)

// stateOpJSON is one operator's keyed state in a `weir bench nexmark
// --json` line: at the sample of each subtask with the most keys (the
// state of a bounded run's operators is freed at its end), summed over
// the subtasks.
type stateOpJSON struct {
	Operator    string  `json:"operator"`
	Keys        int64   `json:"keys"`
	Bytes       int64   `json:"bytes"`
	BytesPerKey float64 `json:"bytes_per_key"`
}

// stateReport is what a run's operators say of their keyed state on the
// heap: per operator, and the bytes a key of the one with the most bytes
// (the query's main state). Operators built on Process report it (every
// SQL operator that keeps keyed state); windows and joins of the Go API
// do not yet, nor does the Pebble backend (its state is off the heap).
type stateReport struct {
	// StateBytesPerKey is the main operator's bytes a key (0: none
	// reported), StateOperator its name.
	StateBytesPerKey float64       `json:"state_bytes_per_key,omitempty"`
	StateOperator    string        `json:"state_operator,omitempty"`
	StateOperators   []stateOpJSON `json:"state_operators,omitempty"`
}

func stateReportOf(m *weir.Metrics) stateReport {
	by := map[string]*stateOpJSON{}
	for _, o := range m.Operators {
		if o.StatePeakKeys == 0 {
			continue
		}
		s := by[o.Name]
		if s == nil {
			s = &stateOpJSON{Operator: o.Name}
			by[o.Name] = s
		}
		s.Keys += o.StatePeakKeys
		s.Bytes += o.StatePeakBytes
	}
	var r stateReport
	for _, s := range by {
		s.BytesPerKey = math.Round(10*float64(s.Bytes)/float64(s.Keys)) / 10
		r.StateOperators = append(r.StateOperators, *s)
	}
	sort.Slice(r.StateOperators, func(i, j int) bool {
		a, b := r.StateOperators[i], r.StateOperators[j]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Operator < b.Operator
	})
	if len(r.StateOperators) > 0 {
		r.StateBytesPerKey, r.StateOperator = r.StateOperators[0].BytesPerKey, r.StateOperators[0].Operator
	}
	return r
}
