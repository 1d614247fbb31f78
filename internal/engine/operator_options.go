package engine

import (
	"fmt"
	"time"
)

// Parallelism sets how many subtasks run an operator; given to NewJob it is
// the default for every operator. Stateless operators chained to their
// input run at their input's parallelism unless told otherwise.
func Parallelism(n int) Option {
	return bothOpt{fmt.Sprintf("Parallelism(%d)", n), func(c *config) { c.parallelism = n }}
}

// Name names an operator in metrics, logs and errors.
func Name(name string) OperatorOption {
	return opOpt{fmt.Sprintf("Name(%q)", name), func(c *config) { c.name = name }}
}

// UID gives an operator a stable identity that savepoints use to map state
// to operators across code changes. It defaults to the operator's name.
func UID(uid string) OperatorOption {
	return opOpt{fmt.Sprintf("UID(%q)", uid), func(c *config) { c.uid = uid }}
}

// badRecords is OnBadRecord's option.
type badRecords struct {
	name   string
	policy BadRecordPolicy
}

func (o badRecords) String() string       { return o.name }
func (o badRecords) sourceOption() option { return option{o.name, func(*config) {}} }

// OnBadRecord sets what a source does with records it cannot decode: Fail,
// Skip or DeadLetter(sink). It is an option of FromSource. The source's
// split readers must implement BadRecordReporter for Skip and DeadLetter
// (the file, log and Kafka connectors do); Run fails otherwise.
func OnBadRecord(p BadRecordPolicy) SourceOption {
	name := map[badKind]string{failBad: "Fail", skipBad: "Skip", sideBad: "DeadLetter"}[p.kind]
	return badRecords{fmt.Sprintf("OnBadRecord(%s)", name), p}
}

// stateRetention is StateRetention's option.
type stateRetention struct {
	name string
	d    time.Duration
}

func (o stateRetention) String() string          { return o.name }
func (o stateRetention) retentionOption() option { return option{o.name, func(*config) {}} }

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
	return stateRetention{fmt.Sprintf("StateRetention(%v)", d), d}
}

// retention takes StateRetention out of opts and returns the operator
// options left and the state options StateRetention stands for.
func retention(j *Job, what string, opts []RetentionOption) ([]OperatorOption, []StateOption) {
	var rest []OperatorOption
	var so []StateOption
	for _, o := range opts {
		if r, ok := o.(stateRetention); ok {
			if r.d <= 0 {
				j.fail(fmt.Errorf("weir: %s: StateRetention(%v) must be positive", what, r.d))
				continue
			}
			so = []StateOption{TTL(r.d)}
			continue
		}
		rest = append(rest, opOpt(o.retentionOption()))
	}
	return rest, so
}

// sourceOptions splits FromSource's options into the operator options and
// the bad-record policy (Fail unless OnBadRecord says otherwise).
func sourceOptions(opts []SourceOption) ([]OperatorOption, BadRecordPolicy) {
	var rest []OperatorOption
	bad := Fail
	for _, o := range opts {
		if b, ok := o.(badRecords); ok {
			bad = b.policy
			continue
		}
		rest = append(rest, opOpt(o.sourceOption()))
	}
	return rest, bad
}
