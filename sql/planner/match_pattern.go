package planner

import (
	"strconv"
	"strings"

	"github.com/weirstream/weir/cep"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// The PATTERN of MATCH_RECOGNIZE as a tree of variables and groups, and
// its plan onto weir's CEP engine: a variable is a stage, a parenthesized
// group a cep group stage (NextGroup), an alternation `A B | C` a cep
// alternation stage (NextAlt, alternatives in SQL's preference order),
// PERMUTE(A, B, C) the alternation of every order of its elements (the
// SQL standard's definition, orders in lexicographic order of the
// elements). A variable may appear more than once (in several
// alternatives, or in a sequence); each occurrence is a stage of its own,
// named after the variable and its occurrence, and the rows of all its
// stages are the variable's rows.

// mrTerm is an element of a PATTERN: a variable (v set) or a group of
// alternatives, with its quantifier.
type mrTerm struct {
	pos       parser.Pos
	v         string // the variable, as first spelled in PATTERN
	stage     string // the variable's stage in the cep pattern
	alts      [][]*mrTerm
	min, max  int
	quant     string
	reluctant bool
	text      string // as written, for errors
}

func (t *mrTerm) loop() bool   { return t.max != t.min }
func (t *mrTerm) greedy() bool { return t.loop() && !t.reluctant }

// mrPattern is a PATTERN's tree and its variables.
type mrPattern struct {
	seq      []*mrTerm
	vars     map[string]string   // upper-case name -> name as first spelled
	order    []string            // the variables in order of first appearance
	stageVar map[string]string   // stage -> variable
	stages   map[string][]string // variable -> its stages
	used     map[string]bool     // stage names taken
}

// maxPermute bounds PERMUTE's elements (n elements: n! alternatives).
const maxPermute = 5

func newMRPattern(terms []parser.PatternTerm) (*mrPattern, error) {
	mp := &mrPattern{vars: map[string]string{}, stageVar: map[string]string{}, stages: map[string][]string{}, used: map[string]bool{}}
	// the variables' names first, so that stage names of later
	// occurrences cannot take a variable's name
	var names func(ts []parser.PatternTerm)
	names = func(ts []parser.PatternTerm) {
		for _, t := range ts {
			if !t.IsGroup() {
				if _, ok := mp.vars[strings.ToUpper(t.Var)]; !ok {
					mp.vars[strings.ToUpper(t.Var)] = t.Var
					mp.order = append(mp.order, t.Var)
					mp.used[t.Var] = true
				}
			}
			for _, a := range t.Alts {
				names(a)
			}
		}
	}
	names(terms)
	seq, err := mp.convert(terms)
	if err != nil {
		return nil, err
	}
	mp.seq = seq
	return mp, nil
}

// convert builds the tree of a sequence: PERMUTE expanded, a group
// without quantifier and alternatives spliced into its sequence, a group
// of one variable with a quantifier the variable with it.
func (mp *mrPattern) convert(ts []parser.PatternTerm) ([]*mrTerm, error) {
	var out []*mrTerm
	for _, t := range ts {
		text := parser.PatternString([]parser.PatternTerm{t})
		if !t.IsGroup() {
			v := mp.vars[strings.ToUpper(t.Var)]
			stage := v
			if len(mp.stages[v]) > 0 {
				for i := len(mp.stages[v]) + 1; ; i++ {
					stage = v + "#" + strconv.Itoa(i)
					if !mp.used[stage] {
						break
					}
				}
			}
			mp.used[stage] = true
			mp.stages[v] = append(mp.stages[v], stage)
			mp.stageVar[stage] = v
			out = append(out, &mrTerm{pos: t.Pos, v: v, stage: stage, min: t.Min, max: t.Max, quant: t.Quant, reluctant: t.Reluctant, text: text})
			continue
		}
		alts := t.Alts
		if t.Permute {
			if len(alts) > maxPermute {
				return nil, parser.Errorf(t.Pos, "PERMUTE of more than %d elements is not supported (%d elements are %d alternatives)", maxPermute, len(alts), factorial(len(alts)))
			}
			alts = permutations(alts)
		}
		var conv [][]*mrTerm
		for _, a := range alts {
			c, err := mp.convert(a)
			if err != nil {
				return nil, err
			}
			conv = append(conv, c)
		}
		one := t.Min == 1 && t.Max == 1 && !t.Reluctant
		switch {
		case len(conv) == 1 && one:
			out = append(out, conv[0]...)
		case len(conv) == 1 && len(conv[0]) == 1 && conv[0][0].v != "" && conv[0][0].min == 1 && conv[0][0].max == 1:
			v := *conv[0][0]
			v.min, v.max, v.quant, v.reluctant, v.pos, v.text = t.Min, t.Max, t.Quant, t.Reluctant, t.Pos, text
			out = append(out, &v)
		default:
			out = append(out, &mrTerm{pos: t.Pos, alts: conv, min: t.Min, max: t.Max, quant: t.Quant, reluctant: t.Reluctant, text: text})
		}
	}
	return out, nil
}

func factorial(n int) int {
	f := 1
	for i := 2; i <= n; i++ {
		f *= i
	}
	return f
}

// permutations lists every order of the elements, each the concatenation
// of the elements' sequences, in lexicographic order of the elements'
// positions (PERMUTE(A, B, C): A B C | A C B | B A C | B C A | C A B | C B A).
func permutations(els [][]parser.PatternTerm) [][]parser.PatternTerm {
	var out [][]parser.PatternTerm
	var rec func(cur []parser.PatternTerm, left []int)
	rec = func(cur []parser.PatternTerm, left []int) {
		if len(left) == 0 {
			out = append(out, cur)
			return
		}
		for i, e := range left {
			rest := append(append([]int(nil), left[:i]...), left[i+1:]...)
			rec(append(append([]parser.PatternTerm(nil), cur...), els[e]...), rest)
		}
	}
	idx := make([]int, len(els))
	for i := range idx {
		idx[i] = i
	}
	rec(nil, idx)
	return out
}

// check refuses, at their place, the shapes weir's CEP engine cannot run.
func (mp *mrPattern) check() error { return checkSeq(mp.seq, true, true) }

func checkSeq(seq []*mrTerm, top, last bool) error {
	for i, t := range seq {
		if t.max == 0 {
			return parser.Errorf(t.pos, "the quantifier %s of '%s' matches no row", t.quant, t.name())
		}
		if t.reluctant && t.min == 0 && t.max == 1 {
			return parser.Errorf(t.pos, "a reluctant optional variable ('%s') is not supported, as in Flink", t.text)
		}
		if i == 0 && t.min == 0 {
			if top {
				return parser.Errorf(t.pos, "the first variable of a PATTERN cannot be optional ('%s'), as in Flink", t.text)
			}
			return parser.Errorf(t.pos, "the first element of a group or alternative cannot be optional ('%s') on weir's CEP engine", t.text)
		}
		if i > 0 && t.min == 0 {
			if prev := seq[i-1]; prev.greedy() {
				return parser.Errorf(t.pos, "an optional variable ('%s') cannot follow a greedy one ('%s') on weir's CEP engine; make '%s' reluctant ('%s?')", t.text, prev.text, prev.name(), prev.text)
			}
		}
		end := last && i == len(seq)-1
		if end && t.greedy() && (t.v == "" || t.max < 0) {
			if t.v != "" {
				return parser.Errorf(t.pos, "a greedy quantifier on the last variable of a PATTERN is not supported, as in Flink: end the pattern with a single variable or a reluctant quantifier ('%s?')", t.text)
			}
			return parser.Errorf(t.pos, "a greedy quantifier on a group that ends a PATTERN is not supported (as on a last variable): end the pattern with a single variable or make it reluctant ('%s?')", t.text)
		}
		for _, a := range t.alts {
			if err := checkSeq(a, false, end); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *mrTerm) name() string {
	if t.v != "" {
		return t.v
	}
	return t.text
}

// mrCovers reports whether every match of the sequence has rows of v: a
// variable of every alternative it is in (quantifiers aside).
func mrCovers(seq []*mrTerm, v string) bool {
	for _, t := range seq {
		if t.v == v {
			return true
		}
		if t.v == "" {
			all := true
			for _, a := range t.alts {
				all = all && mrCovers(a, v)
			}
			if all {
				return true
			}
		}
	}
	return false
}

// build makes the cep pattern of a sequence; cond gives each variable's
// stage its condition (nil: any row).
func buildSeq(seq []*mrTerm, skip []cep.Option, cond func(p *cep.Pattern[types.Row], v string) *cep.Pattern[types.Row]) *cep.Pattern[types.Row] {
	var pat *cep.Pattern[types.Row]
	for i, t := range seq {
		if t.v != "" {
			if i == 0 {
				pat = cep.Begin[types.Row](t.stage, skip...)
			} else {
				pat = pat.Next(t.stage)
			}
			pat = cond(pat, t.v)
		} else {
			alts := make([]*cep.Pattern[types.Row], len(t.alts))
			for j, a := range t.alts {
				alts[j] = buildSeq(a, nil, cond)
			}
			switch {
			case i == 0 && len(alts) == 1:
				pat = cep.BeginGroup(alts[0], skip...)
			case i == 0:
				pat = cep.BeginAlt(alts, skip...)
			case len(alts) == 1:
				pat = pat.NextGroup(alts[0])
			default:
				pat = pat.NextAlt(alts...)
			}
		}
		switch {
		case t.min == 1 && t.max == 1:
		case t.min == 0 && t.max == 1:
			pat = pat.Optional()
		case t.max < 0:
			if t.min <= 1 {
				pat = pat.OneOrMore()
			} else {
				pat = pat.TimesOrMore(t.min)
			}
			pat = pat.Consecutive()
			if t.min == 0 {
				pat = pat.Optional()
			}
		case t.min == t.max:
			pat = pat.Times(t.min).Consecutive()
		default:
			pat = pat.TimesRange(t.min, t.max).Consecutive()
		}
		if t.max != t.min && t.max != 1 && !t.reluctant {
			pat = pat.Greedy()
		}
	}
	return pat
}

// mrSteps lays a match's (or partial match's) steps out as its rows and
// their variables.
func (mp *mrPattern) mrSteps(steps []cep.Step[types.Row], extra int) ([]types.Row, []string) {
	all := make([]types.Row, len(steps), len(steps)+extra)
	labels := make([]string, len(steps), len(steps)+extra)
	for i, s := range steps {
		all[i], labels[i] = s.Event, mp.stageVar[s.Stage]
	}
	return all, labels
}
