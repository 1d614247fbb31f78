package expr

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
	l     *PushLayout
	col   int
	field int // -1: the whole column
	idx   int // slot in the pushed row; -1 until registered
	// comp is set on a computed column's leaf: its value is computed once
	// per row as the scan reads it (from the leaves comp reads), so that
	// the watermark and the Calcs share one evaluation.
	comp *Expr
}

// DepSet is the leaves an expression reads. Unknown is set when it embeds
// an expression built outside the compiler, whose leaves are not known.
type DepSet struct {
	leaves  []*leafRef
	Unknown bool
	// watermarks are the CURRENT_WATERMARK calls it makes (watermark.go)
	watermarks []*WatermarkRef
}

func (d *DepSet) add(o *DepSet) {
	if o != nil {
		d.leaves = append(d.leaves, o.leaves...)
		d.Unknown = d.Unknown || o.Unknown
		d.watermarks = append(d.watermarks, o.watermarks...)
	}
}

// use records that the expression being compiled embeds x.
func (d *DepSet) use(x Expr) {
	if x.Deps == nil && !x.Const {
		d.Unknown = true
	}
	d.add(x.Deps)
}

// PushLayout is the layout of a projecting scan's rows.
type PushLayout struct {
	// Table names the scanned table, for errors.
	Table string
	// Paths are what the scan's rows hold, one slot each: what the
	// connector is asked to project.
	Paths []connector.Path
	// all is every leaf compiled over the scan: what an expression whose
	// deps are unknown (built outside the compiler) may read.
	all []*leafRef
	// Frozen is set once the scan is built: a leaf registered after it
	// has no slot, an error.
	Frozen bool
	// Comps are the registered computed leaves, in registration order.
	Comps []*leafRef
	// readers are the conjunctions the filters of the Calcs over the scan
	// imply, one per Calc (AddFilter); unfiltered is set when a Calc
	// implies none.
	readers    [][]connector.Predicate
	unfiltered bool
}

// AddFilter records the filter of a Calc that reads the scan (nil: it
// keeps every row). A Calc may be recorded more than once.
func (l *PushLayout) AddFilter(filter *Expr) {
	var ps []connector.Predicate
	if filter != nil {
		for _, b := range filter.bounds {
			if b.leaf.l == l {
				ps = append(ps, b.p)
			}
		}
	}
	if len(ps) == 0 {
		l.unfiltered = true
		return
	}
	l.readers = append(l.readers, ps)
}

// Filters returns one conjunction of predicates per Calc that reads the
// scan, or nil when one of them implies none: a row that satisfies none
// of them is read by no one (connector.Source.Prune).
func (l *PushLayout) Filters() [][]connector.Predicate {
	if l.unfiltered {
		return nil
	}
	return l.readers
}

func (l *PushLayout) leaf(col, field int) *leafRef {
	lf := &leafRef{l: l, col: col, field: field, idx: -1}
	l.all = append(l.all, lf)
	return lf
}

// ColRef is a reference to physical column col in the pushed layout.
func (l *PushLayout) ColRef(col int, t types.Type) Expr {
	lf := l.leaf(col, -1)
	return withTyped(Expr{Type: t, Col: -1, whole: lf, leaf: lf, Deps: &DepSet{leaves: []*leafRef{lf}},
		Eval: func(r []types.Value) types.Value { return r[lf.idx] }}, leafInt(lf), false)
}

// fieldRef reads field fi of the ROW column that whole reads, as its own
// value of the pushed row (NULL when the ROW is NULL, as fieldAccess).
func fieldRef(whole *leafRef, fi int, t types.Type, generic bool) Expr {
	lf := whole.l.leaf(whole.col, fi)
	return withTyped(Expr{Type: t, Col: -1, leaf: lf, Deps: &DepSet{leaves: []*leafRef{lf}},
		Eval: func(r []types.Value) types.Value { return r[lf.idx] }}, leafInt(lf), generic)
}

// ComputedRef is a reference to a computed column whose expression is ce.
func (l *PushLayout) ComputedRef(ce Expr) Expr {
	lf := &leafRef{l: l, col: -1, field: -1, idx: -1, comp: &ce}
	l.all = append(l.all, lf)
	return withTyped(Expr{Type: ce.Type, Col: -1, leaf: lf, Deps: &DepSet{leaves: []*leafRef{lf}},
		Eval: func(r []types.Value) types.Value { return r[lf.idx] }}, leafInt(lf), false)
}

// Fill computes the registered computed leaves of a row.
func (l *PushLayout) Fill(r []types.Value) {
	for _, lf := range l.Comps {
		r[lf.idx] = lf.comp.Eval(r)
	}
}

func (l *PushLayout) register(lf *leafRef) error {
	if lf.idx >= 0 {
		return nil
	}
	if lf.comp != nil {
		if l.Frozen {
			return fmt.Errorf("table '%s' is read by a second Calc after its projected scan was built (a computed column)", l.Table)
		}
		if err := l.RegisterDeps(lf.comp); err != nil {
			return err
		}
		l.Paths = append(l.Paths, connector.Path{Col: -1, Field: -1})
		lf.idx = len(l.Paths) - 1
		l.Comps = append(l.Comps, lf)
		return nil
	}
	p := connector.Path{Col: lf.col, Field: lf.field}
	for i, q := range l.Paths {
		if q == p {
			lf.idx = i
			return nil
		}
	}
	if l.Frozen {
		return fmt.Errorf("table '%s' is read by a second Calc after its projected scan was built (column %d, field %d)", l.Table, lf.col, lf.field)
	}
	l.Paths = append(l.Paths, p)
	lf.idx = len(l.Paths) - 1
	return nil
}

// RegisterDeps gives a slot in l to every leaf the expressions read; an
// expression that does not know its leaves gets every leaf compiled over l.
func (l *PushLayout) RegisterDeps(es ...*Expr) error {
	for _, e := range es {
		if e == nil || e.Const {
			continue
		}
		leaves := l.all
		if e.Deps != nil && !e.Deps.Unknown {
			leaves = e.Deps.leaves
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

// MergeDeps returns the union of the expressions' deps (unknown when one of
// them does not know its own).
func MergeDeps(es ...Expr) *DepSet {
	d := &DepSet{}
	for _, e := range es {
		d.use(e)
	}
	return d
}

// CopySource returns the input value a Calc can copy for e without
// evaluating it (a plain column or leaf read), or -1. It is called when
// the Calc is built, after its leaves have their slots.
func CopySource(e Expr, pushed bool) int {
	switch {
	case e.leaf != nil:
		return e.leaf.idx
	case e.Col >= 0 && !pushed:
		return e.Col
	}
	return -1
}
