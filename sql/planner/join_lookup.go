package planner

import (
	"context"
	"fmt"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// planLookupJoin plans `probe [LEFT] JOIN t FOR SYSTEM_TIME AS OF
// probe.proc_time ON probe.k = t.k`, where t's connector can look rows up
// (connector.LookupFactory, 'jdbc'): Flink's lookup join. Each probe row
// queries t by the ON equalities when it arrives (through the connector's
// cache, if its options set one) and is joined with the rows found then;
// a LEFT join pads a row that finds none. Later changes of t do not
// change results already emitted. As in Flink, the probe rows are looked
// up where they are (no shuffle by the lookup key: each subtask has its
// own client and cache; Flink's LOOKUP hint with 'shuffle' is not read). ok is
// false when the join is not a lookup join (a temporal join by event time,
// or a table that cannot look up).
func (p *planner) planLookupJoin(j *parser.Join, ref *parser.TableRef) (*rel, bool, error) {
	td := p.s.cat.table(ref.Name)
	if td == nil || p.ctes[strings.ToLower(ref.Name)] != nil {
		return nil, false, nil
	}
	ct := &connector.Table{Name: td.ddl.Name, Options: td.options, Settings: p.s.settings(), PrimaryKey: td.pk}
	for _, pi := range td.physical {
		f := types.Field{Name: td.cols[pi].Name, Type: td.cols[pi].Type}
		f.Type.TimeAttr = types.NoTimeAttr
		ct.Schema = append(ct.Schema, f)
	}
	if !connector.CanLookup(ct) {
		return nil, false, nil
	}
	left, err := p.planFrom(j.Left)
	if err != nil {
		return nil, true, err
	}
	// AS OF a processing-time attribute of the probe side
	id, ok := ref.AsOf.(*parser.Ident)
	if !ok {
		return nil, true, expr.ErrAt(ref.AsOf, "FOR SYSTEM_TIME AS OF of a lookup join takes the probe side's processing-time attribute")
	}
	ai, rest, err := (&expr.Compiler{Funcs: p.s.cat.functions(), Scope: left.sc}).Resolve(id)
	if err != nil {
		return nil, true, err
	}
	if len(rest) > 0 || left.sc.Cols[ai].Type.TimeAttr != types.ProctimeAttr {
		if left.sc.Cols[ai].Type.TimeAttr == types.RowtimeAttr {
			return nil, false, nil // an event-time temporal join
		}
		return nil, true, expr.ErrAt(ref.AsOf, "FOR SYSTEM_TIME AS OF '%s': a lookup join needs a processing-time attribute of the probe side (declare it as `%s AS PROCTIME()`)", parser.ExprString(ref.AsOf), id.Parts[len(id.Parts)-1])
	}
	if j.Kind != parser.InnerJoin && j.Kind != parser.LeftJoin {
		return nil, true, parser.Errorf(j.Pos, "a lookup join (FOR SYSTEM_TIME AS OF) must be an inner or LEFT join, not %s", j.Kind)
	}
	// the probe side carries only the columns the statement reads; its
	// AS OF attribute is not one of them unless read elsewhere
	left = pruneJoinInput(left, p.joinNeed[j].forLookup())
	if len(td.computed) > 0 {
		return nil, true, parser.Errorf(ref.Pos, "the lookup table '%s' has computed columns, which a lookup join does not compute (yet)", ref.Name)
	}
	if len(td.meta) > 0 {
		return nil, true, parser.Errorf(ref.Pos, "the lookup table '%s' has metadata columns, which a lookup join does not read (yet)", ref.Name)
	}
	alias := ref.Alias
	if alias == "" {
		alias = lastPart(ref.Name)
	}
	nl := len(left.sc.Cols)
	rsc := &expr.Scope{}
	for _, pi := range td.physical {
		c := td.cols[pi]
		c.Qual = alias
		c.Type.TimeAttr = types.NoTimeAttr
		rsc.Cols = append(rsc.Cols, c)
	}
	nr := len(rsc.Cols)
	sc := &expr.Scope{Cols: append(append([]expr.Column(nil), left.sc.Cols...), rsc.Cols...)}
	if j.Kind == parser.LeftJoin {
		for i := nl; i < len(sc.Cols); i++ {
			sc.Cols[i].Type = sc.Cols[i].Type.Nullable()
		}
	}
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: sc, What: "a join condition"}
	lec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: left.sc, What: "a join condition"}
	var lkeys []expr.Expr
	var keyCols []int
	var keyText, resText []string
	var residual []parser.Expr
	for _, c := range splitAnd(j.On) {
		if b, ok := c.(*parser.Binary); ok && b.Op == "=" {
			l, r := b.L, b.R
			ri := rightCol(r, ec, nl)
			if ri < 0 {
				l, r = r, l
				ri = rightCol(r, ec, nl)
			}
			if ri >= 0 {
				if lk, err := lec.Compile(l); err == nil {
					if lk, err = expr.Cast(lk, ct.Schema[ri].Type.Nullable(), l); err != nil {
						return nil, true, err
					}
					lkeys, keyCols = append(lkeys, lk), append(keyCols, ri)
					keyText = append(keyText, parser.ExprString(c))
					continue
				}
			}
		}
		residual = append(residual, c)
	}
	if len(lkeys) == 0 {
		return nil, true, parser.Errorf(j.Pos, "a lookup join needs an equality between a column of '%s' and the probe side in ON", ref.Name)
	}
	res, text, err := compileConjunction(ec, residual)
	if err != nil {
		return nil, true, err
	}
	resText = append(resText, text...)
	ls, err := connector.CreateLookup(ct, keyCols)
	if err != nil {
		return nil, true, optionsErr(td, ref.Pos, err)
	}
	op := fmt.Sprintf("LookupJoin(table=[%s], joinType=[%s], lookup=[%s]", td.ddl.Name, j.Kind, strings.Join(keyText, " AND "))
	if len(resText) > 0 {
		op += ", where=[" + strings.Join(resText, " AND ") + "]"
	}
	op += ")"
	mode := left.mode
	if mode == types.Upsert {
		mode = types.All
	}
	out := &rel{op: op, sc: sc, mode: mode, inputs: []*rel{left}, updater: left.updater, bounded: left.bounded}
	outer := j.Kind == parser.LeftJoin
	out.build = func(b *builder) (*weir.Stream[types.Row], error) {
		in, err := b.stream(left)
		if err != nil {
			return nil, err
		}
		lk := evals(lkeys)
		var resEval expr.EvalFn
		if res != nil {
			resEval = res.Eval
		}
		// joined rows lent to a chained Calc or sink reuse a ring (lend.go)
		rm := b.rowMaker(out, nl+nr)
		return weir.FlatMapCloseWith(in, func() (func(types.Row, func(types.Row)), func() error) {
			f := &lookupJoinFn{src: ls, keys: lk, nl: nl, nr: nr, outer: outer, residual: resEval, out: rm}
			return f.process, f.close
		}, b.uid("lookup-join")), nil
	}
	return out, true, nil
}

// lookupJoinFn looks each probe row up, in the probe row's subtask (as
// Flink's LookupJoin: no shuffle). Its client connects on the first row
// and closes at the end of the input. A failed lookup fails the job.
type lookupJoinFn struct {
	src      *connector.LookupSource
	client   connector.LookupClient
	keys     []expr.EvalFn
	nl, nr   int
	outer    bool
	residual expr.EvalFn
	key      []types.Value
	// out makes the joined rows (lent from a ring where they may be)
	out rowMaker
}

func (f *lookupJoinFn) process(in types.Row, emit func(types.Row)) {
	f.key = f.key[:0]
	null := false
	for _, k := range f.keys {
		v := k(in.Values)
		null = null || v.Null
		f.key = append(f.key, v)
	}
	var found []types.Row
	if !null {
		if f.client == nil {
			c, err := f.src.Open(context.Background())
			if err != nil {
				panic(lookupError(err))
			}
			f.client = c
		}
		var err error
		if found, err = f.client.Lookup(context.Background(), f.key); err != nil {
			panic(lookupError(err))
		}
	}
	matched := false
	for _, r := range found {
		vs := f.out.next()
		copy(vs, in.Values)
		copy(vs[f.nl:], r.Values)
		if f.residual != nil {
			if v := f.residual(vs); v.Null || !v.Bool() {
				continue
			}
		}
		matched = true
		emit(types.Row{Kind: in.Kind, Values: vs})
	}
	if !matched && f.outer {
		emit(types.Row{Kind: in.Kind, Values: joinedValues(f.nl, f.nr, in.Values, nil)})
	}
}

// close closes the client at the end of the input.
func (f *lookupJoinFn) close() error {
	if f.client == nil {
		return nil
	}
	err := f.client.Close()
	f.client = nil
	return err
}

// lookupError is a lookup join's failed lookup, which fails the job (the
// task's panic becomes its error).
func lookupError(err error) error { return fmt.Errorf("lookup join: %w", err) }
