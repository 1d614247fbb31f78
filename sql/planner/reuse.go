package planner

import (
	"fmt"
	"strings"

	"github.com/weirstream/weir/sql/expr"
)

// Sub-plan reuse, as Flink's planner does it by default
// (table.optimizer.reuse-sub-plan-enabled, reuse-source-enabled): a part
// of a plan that two branches of a query compute alike runs once and feeds
// both. Nexmark q5 reads the bid view twice and aggregates it into the same
// per-auction window counts twice (AuctionBids and CountBids); with reuse
// the source, the view's Calc and the window aggregation run once.
//
// weir finds the equal parts where it plans them instead of comparing
// digests of a finished plan:
//
//   - a view (or table) is planned once per query and shared by its
//     references; an alias (FROM bid B) is a copy with its columns renamed
//     whose stream is the original's (rel.same);
//   - a window aggregation over the same input (the same rel) with the same
//     window, group keys and aggregate calls is planned once
//     (planner.reuseRel).
//
// The builder builds each rel once (builder.stream), so shared rels are
// one operator chain. A shared projecting scan is read by several Calcs;
// builder.prepare registers what all of them read before the scan is
// built.

// reuseRel returns the rel planned before under digest, or r (recorded).
func (p *planner) reuseRel(digest string, r *rel) *rel {
	if p.reused == nil {
		p.reused = map[string]*rel{}
	}
	if old, ok := p.reused[digest]; ok {
		return old
	}
	p.reused[digest] = r
	return r
}

// scopeDigest names a scope's columns as expressions see them (qualifier,
// name), for digests of expressions compiled against it.
func scopeDigest(sc *expr.Scope) string {
	var b strings.Builder
	for _, c := range sc.Cols {
		fmt.Fprintf(&b, "%s.%s:%s,", c.Qual, c.Name, c.Type)
	}
	return b.String()
}

// explainReuse numbers the sub-plans EXPLAIN meets more than once.
type explainReuse struct {
	ids     map[*rel]int
	printed map[int]bool
}

// reuseIDs finds the rels that root reaches by more than one path, in
// the order EXPLAIN prints them; a shared rel's inputs are counted once.
func reuseIDs(root *rel) *explainReuse {
	refs := map[*rel]int{}
	var order []*rel
	var count func(r *rel)
	count = func(r *rel) {
		c := r.canonical()
		refs[c]++
		if refs[c] > 1 {
			return
		}
		order = append(order, c)
		for _, in := range r.inputs {
			count(in)
		}
	}
	if root != nil {
		count(root)
	}
	out := &explainReuse{ids: map[*rel]int{}, printed: map[int]bool{}}
	for _, c := range order {
		if refs[c] > 1 {
			out.ids[c] = len(out.ids) + 1
		}
	}
	return out
}

// prepare registers, on every projecting scan of the plan under root, the
// leaves the Calcs over it read, so that a scan shared by several Calcs
// (a reused view) is built with all of them whichever Calc is built first.
// Calcs reached here and not built cost a generated value each, no more.
func (b *builder) prepare(root *rel) error {
	seen := map[*rel]bool{}
	var walk func(r *rel) error
	walk = func(r *rel) error {
		if r == nil || seen[r] {
			return nil
		}
		seen[r] = true
		if c := r.calc; c != nil && c.input.canonical().push != nil {
			es := []*expr.Expr{c.filter}
			for i := range c.exprs {
				es = append(es, &c.exprs[i])
			}
			if err := c.input.canonical().push.RegisterDeps(es...); err != nil {
				return err
			}
			c.input.canonical().push.AddFilter(c.filter)
		}
		for _, in := range r.inputs {
			if err := walk(in); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root)
}
