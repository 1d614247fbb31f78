package planner

// UPDATE_BEFORE only where it is read. An updating operator's change of
// a row is a -U of its old value and a +U of the new one; a sink that
// does nothing with the -U (Flink's blackhole, an upsert sink, which
// writes +U by its key) need not be sent it, and Flink's planner then has
// the operator make none (its changelog mode inference: the sink's
// required mode lacks UPDATE_BEFORE, which the operators above it pass
// down). weir does the same for the group aggregation: when the rows of
// the statement's query reach such a sink through projections only
// (Calcs without a filter, which pass a -U only to have it dropped), its
// changes are +U alone. A Calc that filters needs the -U (the new value
// may not pass where the old one did), and so does every operator that
// keeps or combines rows (joins, aggregations, Top-N above it): the walk
// stops there.

// needUB returns the flag, set once every statement is built, saying
// whether r's updates must carry their -U rows (true unless nothing
// after r reads them).
func (b *builder) needUB(r *rel) *bool {
	if b.ub == nil {
		b.ub = map[*rel]*bool{}
	}
	f := new(bool)
	*f = true
	b.ub[r.canonical()] = f
	return f
}

// settleUpdateBefore clears the flags of the operators whose updates go
// only, through projections, to a sink that drops -U rows (the rels of
// roots).
func (b *builder) settleUpdateBefore(roots []*rel) {
	for _, r := range roots {
		for r != nil {
			r = r.canonical()
			if b.reads[r] > 1 {
				break // another consumer may need them
			}
			if f := b.ub[r]; f != nil {
				*f = false
				break
			}
			switch {
			case r.calc != nil && r.calc.filter == nil && len(r.inputs) == 1:
				r = r.inputs[0]
			default:
				r = nil
			}
		}
	}
}
