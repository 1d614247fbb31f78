package types

// ChangelogMode is the set of row kinds a stream carries, or a sink accepts
// (Flink's ChangelogMode, reduced to the three modes the planner uses).
// The modes are ordered: a sink accepting mode m accepts every input whose
// mode is at most m, given the sink's key (see Upsert).
type ChangelogMode uint8

const (
	// InsertOnly: +I rows only (an append stream; Flink's insertOnly()).
	InsertOnly ChangelogMode = iota
	// Upsert: +I, +U and -D by a unique key, without -U rows (Flink's
	// upsert()). A source in this mode (upsert-kafka) needs the planner
	// to normalize it before an operator that needs retractions; a sink in
	// this mode (jdbc or upsert-kafka with a PRIMARY KEY) writes +I/+U as
	// an upsert and -D as a delete by its primary key, and ignores -U rows,
	// so it also accepts an All input whose updates are keyed by that key.
	Upsert
	// All: +I, -U, +U, -D (Flink's all(); debezium-json, print).
	All
)

func (m ChangelogMode) String() string {
	switch m {
	case InsertOnly:
		return "insert-only"
	case Upsert:
		return "upsert"
	case All:
		return "all"
	}
	return "ChangelogMode(?)"
}

// Kinds returns the row kinds the mode holds, in Flink's notation
// ("[I]", "[I,UA,D]", "[I,UB,UA,D]"), as EXPLAIN prints them.
func (m ChangelogMode) Kinds() string {
	switch m {
	case InsertOnly:
		return "[I]"
	case Upsert:
		return "[I,UA,D]"
	}
	return "[I,UB,UA,D]"
}
