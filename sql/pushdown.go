package sql

import (
	"fmt"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

// Projection pushdown (Flink's SupportsProjectionPushDown, nested fields
// included). A source whose connector can project (connector.Source.Project)
// is planned as a raw scan in a "pushed" layout and a Calc over it: the
// scan's rows hold only what the plan reads, one flat value per column or
// ROW field read (bid.price is one value, not a ROW of seven), in the order
// first read. Expressions over the scan compile to reads of leaves
// (leafRef) whose slot in the pushed row is assigned when the Calc that
// evaluates them is built; every compiled expression carries the leaves it
// reads (deps), so the Calcs a query fuses away (a view's projection of
// columns the query does not use) cost nothing at run time.
//
// The raw scan is only ever read by Calcs over it (sourceRel always wraps
// it in one, and a Calc over a Calc fuses into a Calc over the scan), so no
// other operator sees the pushed layout.

// leafRef is a read of the pushed row: column col of the table's physical
// schema, or field field of that column's ROW.
type leafRef struct {
	l     *pushLayout
	col   int
	field int // -1: the whole column
	idx   int // slot in the pushed row; -1 until registered
	// comp is set on a computed column's leaf: its value is computed once
	// per row as the scan reads it (from the leaves comp reads), so that
	// the watermark and the Calcs share one evaluation.
	comp *cexpr
}

// depSet is the leaves an expression reads. unknown is set when it embeds
// an expression built outside the compiler, whose leaves are not known.
type depSet struct {
	leaves  []*leafRef
	unknown bool
}

func (d *depSet) add(o *depSet) {
	if o != nil {
		d.leaves = append(d.leaves, o.leaves...)
		d.unknown = d.unknown || o.unknown
	}
}

// use records that the expression being compiled embeds x.
func (d *depSet) use(x cexpr) {
	if x.deps == nil && !x.konst {
		d.unknown = true
	}
	d.add(x.deps)
}

// pushLayout is the layout of a projecting scan's rows.
type pushLayout struct {
	table string
	paths []connector.Path
	// all is every leaf compiled over the scan: what an expression whose
	// deps are unknown (built outside the compiler) may read.
	all    []*leafRef
	frozen bool
	// comps are the registered computed leaves, in registration order.
	comps []*leafRef
}

func (l *pushLayout) leaf(col, field int) *leafRef {
	lf := &leafRef{l: l, col: col, field: field, idx: -1}
	l.all = append(l.all, lf)
	return lf
}

// colRef is a reference to physical column col in the pushed layout.
func (l *pushLayout) colRef(col int, t types.Type) cexpr {
	lf := l.leaf(col, -1)
	return withTyped(cexpr{t: t, col: -1, whole: lf, leaf: lf, deps: &depSet{leaves: []*leafRef{lf}},
		eval: func(r []types.Value) types.Value { return r[lf.idx] }}, leafInt(lf))
}

// fieldRef reads field fi of the ROW column that whole reads, as its own
// value of the pushed row (NULL when the ROW is NULL, as fieldAccess).
func fieldRef(whole *leafRef, fi int, t types.Type) cexpr {
	lf := whole.l.leaf(whole.col, fi)
	return withTyped(cexpr{t: t, col: -1, leaf: lf, deps: &depSet{leaves: []*leafRef{lf}},
		eval: func(r []types.Value) types.Value { return r[lf.idx] }}, leafInt(lf))
}

// computedRef is a reference to a computed column whose expression is ce.
func (l *pushLayout) computedRef(ce cexpr) cexpr {
	lf := &leafRef{l: l, col: -1, field: -1, idx: -1, comp: &ce}
	l.all = append(l.all, lf)
	return withTyped(cexpr{t: ce.t, col: -1, leaf: lf, deps: &depSet{leaves: []*leafRef{lf}},
		eval: func(r []types.Value) types.Value { return r[lf.idx] }}, leafInt(lf))
}

// fill computes the registered computed leaves of a row.
func (l *pushLayout) fill(r []types.Value) {
	for _, lf := range l.comps {
		r[lf.idx] = lf.comp.eval(r)
	}
}

func (l *pushLayout) register(lf *leafRef) error {
	if lf.idx >= 0 {
		return nil
	}
	if lf.comp != nil {
		if l.frozen {
			return fmt.Errorf("table '%s' is read by a second Calc after its projected scan was built (a computed column)", l.table)
		}
		if err := l.registerDeps(lf.comp); err != nil {
			return err
		}
		l.paths = append(l.paths, connector.Path{Col: -1, Field: -1})
		lf.idx = len(l.paths) - 1
		l.comps = append(l.comps, lf)
		return nil
	}
	p := connector.Path{Col: lf.col, Field: lf.field}
	for i, q := range l.paths {
		if q == p {
			lf.idx = i
			return nil
		}
	}
	if l.frozen {
		return fmt.Errorf("table '%s' is read by a second Calc after its projected scan was built (column %d, field %d)", l.table, lf.col, lf.field)
	}
	l.paths = append(l.paths, p)
	lf.idx = len(l.paths) - 1
	return nil
}

// registerDeps gives a slot in l to every leaf the expressions read; an
// expression that does not know its leaves gets every leaf compiled over l.
func (l *pushLayout) registerDeps(es ...*cexpr) error {
	for _, e := range es {
		if e == nil || e.konst {
			continue
		}
		leaves := l.all
		if e.deps != nil && !e.deps.unknown {
			leaves = e.deps.leaves
		}
		for i := 0; i < len(leaves); i++ { // l.all may grow
			lf := leaves[i]
			if lf.l != l {
				continue
			}
			if err := lf.l.register(lf); err != nil {
				return err
			}
		}
	}
	return nil
}

// mergeDeps returns the union of the expressions' deps (unknown when one of
// them does not know its own).
func mergeDeps(es ...cexpr) *depSet {
	d := &depSet{}
	for _, e := range es {
		d.use(e)
	}
	return d
}

// copySource returns the input value a Calc can copy for e without
// evaluating it (a plain column or leaf read), or -1. It is called when
// the Calc is built, after its leaves have their slots.
func copySource(e cexpr, pushed bool) int {
	switch {
	case e.leaf != nil:
		return e.leaf.idx
	case e.col >= 0 && !pushed:
		return e.col
	}
	return -1
}
