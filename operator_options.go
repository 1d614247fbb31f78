package weir

import (
	"time"

	"github.com/weirstream/weir/internal/engine"
)

// OperatorOption configures one operator: FromSource, Map, Filter, the
// keyed operators, the joins, To... Every OperatorOption is also a
// WindowOption, a SourceOption and a RetentionOption, so Name, UID and
// Parallelism go to every operator. Each option prints itself (String).
type OperatorOption = engine.OperatorOption

// SourceOption configures a source: FromSource takes it. OnBadRecord is
// one, and so is every OperatorOption.
type SourceOption = engine.SourceOption

// RetentionOption configures an operator whose state would otherwise grow
// without bound: Join, JoinChanges, AggregateChanges, NormalizeChanges,
// ToTable and Fold take it. StateRetention is one, and so is every
// OperatorOption.
type RetentionOption = engine.RetentionOption

// Parallelism sets how many subtasks run an operator; given to NewJob it is
// the default for every operator. Stateless operators chained to their
// input run at their input's parallelism unless told otherwise.
func Parallelism(n int) Option {
	return engine.Parallelism(n)
}

// Name names an operator in metrics, logs and errors.
func Name(name string) OperatorOption {
	return engine.Name(name)
}

// UID gives an operator a stable identity that savepoints use to map state
// to operators across code changes. It defaults to the operator's name.
func UID(uid string) OperatorOption {
	return engine.UID(uid)
}

// OnBadRecord sets what a source does with records it cannot decode: Fail,
// Skip or DeadLetter(sink). It is an option of FromSource. The source's
// split readers must implement BadRecordReporter for Skip and DeadLetter
// (the file, log and Kafka connectors do); Run fails otherwise.
func OnBadRecord(p BadRecordPolicy) SourceOption {
	return engine.OnBadRecord(p)
}

// StateRetention bounds the state of Join, JoinChanges, AggregateChanges,
// NormalizeChanges and Fold, which is kept for ever otherwise: an element
// of a join side expires d after it arrived, and a group of
// AggregateChanges d after its last change, in processing time (the job's
// Clock), as Flink's table.exec.state.ttl (idle state retention). Expired
// state is not seen again: a late partner of an expired element does not
// join it, and a change to an expired group starts it over with an Insert.
// Results then depend on processing time and are not reproducible by
// replaying the input: use it where keys go quiet and the state would
// otherwise grow without bound.
func StateRetention(d time.Duration) RetentionOption {
	return engine.StateRetention(d)
}
