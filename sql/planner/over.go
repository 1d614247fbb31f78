package planner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// rankSpec is a ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) select
// list, waiting for the enclosing query's filter on the row number (Top-N
// and deduplication, as Flink plans them).
type rankSpec struct {
	input     *rel
	partition []expr.EvalFn
	order     []orderKey
	items     []expr.EvalFn // the select list over the input; nil at the rank's place
	// from: the input column that items[i] reads as it is (copied, not
	// evaluated), or -1
	from     []int
	rnPos    int
	limit    int64
	keepLast bool // deduplication keeping the last row (ORDER BY time DESC, N = 1)
	// dedup: Flink's Deduplicate (ROW_NUMBER ordered by a time attribute
	// alone, N = 1), whose changes of a partition's row are updates: a
	// -U of the old row (where read, ub.go) and a +U of the new one, where
	// a Top-N's are a -D and a +I
	dedup bool
	text  string
	kind  string // ROW_NUMBER, RANK or DENSE_RANK (rank_topn.go)
}

type orderKey struct {
	eval expr.EvalFn
	cmp  func(a, b types.Value) int
	desc bool
	// timeAttr: the key is a time attribute (a rowtime or proctime column)
	timeAttr bool
	// col: the input column the key is, read without evaluating, or -1
	col int
}

// planOver plans a select list with an OVER window: ROW_NUMBER for Top-N
// (the other OVER aggregations are not built yet).
func (p *planner) planOver(s *parser.Select, from *rel) (*rel, error) {
	var rank *parser.Call
	rankAt := -1
	for i, it := range s.Items {
		if it.Expr == nil || !hasOver(it.Expr) {
			continue
		}
		c, ok := it.Expr.(*parser.Call)
		if !ok || (c.Name != "ROW_NUMBER" && c.Name != "RANK" && c.Name != "DENSE_RANK") {
			return p.planOverAgg(s, from)
		}
		if rank != nil {
			return nil, expr.ErrAt(it.Expr, "only one ROW_NUMBER() per SELECT")
		}
		rank, rankAt = c, i
	}
	if len(rank.Args) > 0 {
		return nil, expr.ErrAt(rank, "ROW_NUMBER takes no arguments")
	}
	if len(rank.Over.OrderBy) == 0 {
		return nil, expr.ErrAt(rank, "ROW_NUMBER() OVER needs ORDER BY")
	}
	if rank.Over.Frame != nil {
		return nil, expr.ErrAt(rank, "ROW_NUMBER() OVER takes no frame")
	}
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: from.sc, What: "OVER"}
	spec := &rankSpec{input: from, text: parser.ExprString(rank), kind: rank.Name}
	for _, e := range rank.Over.PartitionBy {
		ce, err := ec.Compile(e)
		if err != nil {
			return nil, err
		}
		spec.partition = append(spec.partition, ce.Eval)
	}
	for _, o := range rank.Over.OrderBy {
		ce, err := ec.Compile(o.Expr)
		if err != nil {
			return nil, err
		}
		cmp := expr.Comparator(ce.Type, ce.Type)
		if cmp == nil {
			return nil, expr.ErrAt(o.Expr, "cannot order by %s", ce.Type)
		}
		spec.order = append(spec.order, orderKey{eval: ce.Eval, cmp: cmp, desc: o.Desc,
			timeAttr: ce.Type.TimeAttr != types.NoTimeAttr, col: expr.CopySource(ce, false)})
		if len(rank.Over.OrderBy) == 1 && o.Desc && ce.Type.TimeAttr != types.NoTimeAttr && rank.Name == "ROW_NUMBER" {
			spec.keepLast = true
		}
	}
	// the select list: the rank's place holds the row number
	items := append([]parser.SelectItem(nil), s.Items...)
	items[rankAt].Expr = &parser.Literal{Pos: rank.Pos, Kind: parser.NumberLit, Text: "0"}
	pr, err := expandSelect(items, ec)
	if err != nil {
		return nil, err
	}
	// where the rank landed after star expansion
	pos := 0
	for i, it := range s.Items {
		if i == rankAt {
			break
		}
		if it.Star {
			for _, c := range from.sc.Cols {
				if it.StarOf == "" || strings.EqualFold(c.Qual, it.StarOf) {
					pos++
				}
			}
		} else {
			pos++
		}
	}
	spec.rnPos = pos
	sc := &expr.Scope{}
	for i, n := range pr.names {
		t := pr.exprs[i].Type
		if i == pos {
			t = types.Type{Kind: types.BigInt, NotNull: true}
			if s.Items[rankAt].Alias == "" {
				n = fmt.Sprintf("EXPR$%d", rankAt)
			}
		}
		sc.Cols = append(sc.Cols, expr.Column{Name: n, Type: t})
		spec.items = append(spec.items, pr.exprs[i].Eval)
		spec.from = append(spec.from, expr.CopySource(pr.exprs[i], false))
	}
	spec.items[pos] = nil
	spec.from[pos] = -1
	r := &rel{op: "Rank(" + spec.text + ")", sc: sc, mode: types.All, inputs: []*rel{from}, bounded: from.bounded}
	r.updater = r.op
	r.rank = spec
	r.build = func(*builder) (*weir.Stream[types.Row], error) {
		return nil, parser.Errorf(rank.Pos, "%s needs a filter on its row number in the enclosing query (WHERE rn <= N): unbounded ranks are not supported yet", spec.text)
	}
	return r, nil
}

// rankLimit finds a `rn <= N` (or `rn < N`, `rn = 1`, `N >= rn`) conjunct
// on the rank column; it returns N and the other conjuncts.
func rankLimit(w parser.Expr, ec *expr.Compiler, rnCol int) (int64, []parser.Expr) {
	limit := int64(-1)
	var rest []parser.Expr
	for _, c := range splitAnd(w) {
		b, ok := c.(*parser.Binary)
		n, ok2 := int64(0), false
		if ok {
			isRN := func(e parser.Expr) bool {
				id, ok := e.(*parser.Ident)
				if !ok {
					return false
				}
				idx, restParts, err := ec.Resolve(id)
				return err == nil && len(restParts) == 0 && idx == rnCol
			}
			num := func(e parser.Expr) (int64, bool) {
				l, ok := e.(*parser.Literal)
				if !ok || l.Kind != parser.NumberLit {
					return 0, false
				}
				v, err := strconv.ParseInt(l.Text, 10, 64)
				return v, err == nil
			}
			op := b.Op
			l, r := b.L, b.R
			if !isRN(l) && isRN(r) {
				l, r = r, l
				op = map[string]string{"<=": ">=", ">=": "<=", "<": ">", ">": "<", "=": "="}[op]
			}
			if isRN(l) {
				if v, ok := num(r); ok {
					switch op {
					case "<=":
						n, ok2 = v, true
					case "<":
						n, ok2 = v-1, true
					case "=":
						if v == 1 {
							n, ok2 = 1, true
						}
					}
				}
			}
		}
		if ok2 && (limit < 0 || n < limit) {
			limit = n
			continue
		}
		rest = append(rest, c)
	}
	return limit, rest
}

// rankRel is a Top-N: per partition the first N rows in the ORDER BY,
// kept in weir state; each input row emits the changes of the partition's
// top N (-D for rows that leave it or change rank, +I for rows that enter
// it or change rank).
func rankRel(spec *rankSpec, sc *expr.Scope, op string) *rel {
	in := spec.input
	r := &rel{op: op, sc: sc, mode: types.All, inputs: []*rel{in}, bounded: in.bounded}
	r.updater = op
	keep := spec.limit
	retract := in.mode != types.InsertOnly
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		s, err := b.stream(in)
		if err != nil {
			return nil, err
		}
		b.copies(in) // the rows it keeps are copies
		// and it is done with a row once it returns (recycle.go)
		pool := b.recycles(in)
		ks := weir.KeyBy(s, func(row types.Row) string { return partitionKeyOf(spec.partition, row.Values) })
		// rows lent to a chained sink reuse a ring (lend.go, as the group
		// aggregation's)
		rm := b.rowMaker(r, len(spec.items))
		var ub *bool // a Top-N always sends its -D rows
		if spec.dedup {
			ub = b.needUB(r)
		}
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &topNFn{spec: spec, keep: keep, retract: retract, out: rm, ub: ub, recycle: rowRecycler{pool: pool}, topNForm: b.noTopOne,
				inPlace: !b.pebble && b.ttl <= 0, opts: b.stateOpts()}
		}, b.uid("rank")), nil
	}
	return r
}

type topNFn struct {
	spec    *rankSpec
	keep    int64
	retract bool // keep every row (an updating input can retract a top row)
	rows    *weir.ValueState[string, types.Row]
	// out makes the output rows (lent from a ring where they may be)
	out rowMaker
	// ub: a deduplication's -U rows are read (ub.go); nil: always
	ub *bool
	// recycle hands the input rows back to the Calc that made them: each
	// path copies what it keeps of a row, and emits rows of its own
	recycle rowRecycler
	// topNForm: a Top-1 too keeps the Top-N's form (Config.DisableTopOneState)
	topNForm bool
	// inPlace: the state is on the heap, where a value read is the
	// state's own (Pebble's is a decoded copy), and has no TTL to restart:
	// a Top-1's row written over in place needs no Update (rank_dedup.go)
	inPlace bool
	// opts: the state's TTL ('table.exec.state.ttl')
	opts []weir.StateOption
}

func (f *topNFn) Open(rc *weir.RuntimeContext[string]) error {
	f.rows = weir.NewValueState[types.Row](rc, "rows", f.opts...)
	return nil
}

func (f *topNFn) compare(a, b []types.Value) int {
	for i := range f.spec.order {
		o := &f.spec.order[i]
		var x, y types.Value
		if o.col >= 0 {
			x, y = a[o.col], b[o.col]
		} else {
			x, y = o.eval(a), o.eval(b)
		}
		var c int
		switch {
		case x.Null && y.Null:
			c = 0
		case x.Null:
			c = -1 // NULLS FIRST for ASC, as Flink's default
		case y.Null:
			c = 1
		default:
			c = o.cmp(x, y)
		}
		if o.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// position is where row x goes among the sorted rows: after the rows
// that rank before it or tie with it (the earlier arrival first), before
// the ties when the deduplication keeps the last row.
func (f *topNFn) position(rows []types.Value, x []types.Value) int {
	return sort.Search(len(rows), func(i int) bool {
		c := f.compare(rows[i].List(), x)
		if f.spec.keepLast {
			return c >= 0
		}
		return c > 0
	})
}

func (f *topNFn) project(in []types.Value, rn int64) []types.Value {
	out := f.out.next()
	for i, ev := range f.spec.items {
		switch j := f.spec.from[i]; {
		case ev == nil:
			out[i] = types.IntValue(rn)
		case j >= 0:
			out[i] = in[j]
		default:
			out[i] = ev(in)
		}
	}
	return out
}

func (f *topNFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	err := f.process(ctx, in)
	f.recycle.release(in.Values)
	return err
}

func (f *topNFn) process(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	if f.keep == 1 && !f.retract && f.spec.kind == "ROW_NUMBER" && !in.Kind.IsRetraction() && !f.topNForm {
		// deduplication, or a Top-1 (rank_dedup.go)
		return f.topOne(ctx, in)
	}
	st, _ := f.rows.Value()
	old := st.Values // each a ListValue of an input row, sorted
	if !f.retract && f.spec.kind == "ROW_NUMBER" && !in.Kind.IsRetraction() && !(f.spec.keepLast && f.keep == 1) {
		return f.insertRowNumber(ctx, st, in)
	}
	rows := append([]types.Value(nil), old...)
	if in.Kind.IsRetraction() {
		found := -1
		for i, v := range rows {
			if types.EqualValues(v.List(), in.Values) {
				found = i
				break
			}
		}
		if found < 0 {
			return nil
		}
		rows = append(rows[:found], rows[found+1:]...)
	} else {
		x := append([]types.Value(nil), in.Values...)
		i := f.position(rows, x)
		if f.spec.keepLast && f.keep == 1 && i < len(rows) && f.compare(rows[i].List(), x) == 0 {
			rows[i] = types.ListValue(x) // a later row with the same time replaces
		} else {
			rows = append(rows, types.Value{})
			copy(rows[i+1:], rows[i:])
			rows[i] = types.ListValue(x)
		}
		if !f.retract {
			rows = rows[:f.visible(rows, nil)]
		}
	}
	if f.spec.kind == "RANK" || f.spec.kind == "DENSE_RANK" {
		f.emitRanks(ctx, old, rows)
	} else {
		// emit the difference of the top N, rank by rank
		n := int(f.keep)
		for i := 0; i < n; i++ {
			var was, is []types.Value
			if i < len(old) {
				was = old[i].List()
			}
			if i < len(rows) {
				is = rows[i].List()
			}
			if was != nil && is != nil && types.EqualValues(was, is) {
				continue
			}
			if was != nil {
				ctx.Emit(types.Row{Kind: types.Delete, Values: f.project(was, int64(i+1))})
			}
			if is != nil {
				ctx.Emit(types.Row{Kind: types.Insert, Values: f.project(is, int64(i+1))})
			}
		}
	}
	if len(rows) == 0 {
		f.rows.Clear()
	} else {
		f.rows.Update(types.Row{Values: rows})
	}
	return nil
}

// insertRowNumber is ProcessElement of an insert-only ROW_NUMBER Top-N
// (Nexmark q19's ten best bids of an auction): a row that does not enter
// the partition's top N changes nothing and copies nothing; one that
// enters at rank i moves the rows from i on down one rank, in the state's
// list itself (a snapshot encodes the state at the barrier, on this
// goroutine: nothing else reads the list meanwhile), after emitting the
// changes of those ranks (-D of the old row, +I of the new, rank by rank,
// as the general path does).
func (f *topNFn) insertRowNumber(ctx *weir.KeyedContext[string, types.Row], st types.Row, in types.Row) error {
	old := st.Values
	i := f.position(old, in.Values)
	if int64(i) >= f.keep {
		f.rows.Update(st) // (its TTL restarts, as with any row)
		return nil
	}
	x := append([]types.Value(nil), in.Values...)
	n := min(len(old)+1, int(f.keep)) // the partition's rows after
	for j := i; j < n; j++ {
		is := x
		if j > i {
			is = old[j-1].List()
		}
		if j < len(old) {
			was := old[j].List()
			if types.EqualValues(was, is) {
				continue
			}
			ctx.Emit(types.Row{Kind: types.Delete, Values: f.project(was, int64(j+1))})
		}
		ctx.Emit(types.Row{Kind: types.Insert, Values: f.project(is, int64(j+1))})
	}
	if len(old) < n {
		old = append(old, types.Value{})
	}
	copy(old[i+1:], old[i:n-1])
	old[i] = types.ListValue(x)
	f.rows.Update(types.Row{Values: old})
	return nil
}
