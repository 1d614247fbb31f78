package expr

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"sync/atomic"
)

// A literal every match must contain. Go's regexp runs its backtracker or
// NFA over every input; a pattern such as Nexmark q21's
// '(&|^)channel_id=([^&]*)' cannot match a string without "channel_id=",
// which strings.Contains rules out at memory speed (RE2 and Hyperscan
// prefilter on such required literals too). requiredLiteral finds the
// longest literal that a top-level concatenation of the pattern always
// matches (through captures), case-sensitive only.

// requiredLiteral returns a substring of every match of pattern, or "".
func requiredLiteral(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	return mustLiteral(re.Simplify())
}

func mustLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture:
		return mustLiteral(re.Sub[0])
	case syntax.OpPlus:
		// x+ matches x at least once
		return mustLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return mustLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		// the longest run of adjacent literals, or the longest of the
		// parts' own
		best, run := "", ""
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 {
				run += string(sub.Rune)
				if len(run) > len(best) {
					best = run
				}
				continue
			}
			run = ""
			if l := mustLiteral(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// literalRegexp is a compiled pattern with its required literal, and the
// last submatches found with the pattern. A statement that calls
// REGEXP_EXTRACT(x, p) in its WHERE and again in its SELECT (Nexmark q21)
// asks the same of the same string twice a row: the second call finds
// the first's answer there (a one-entry cache shared by the calls of one
// pattern, as a Calc's common subexpression; its entries are immutable,
// so the subtasks that share it need no lock).
type literalRegexp struct {
	*regexp.Regexp
	lit  string
	last *atomic.Pointer[submatches]
}

// submatches is what FindStringSubmatch gave for in.
type submatches struct {
	in string
	m  []string
}

// literalRegexps holds each pattern's literalRegexp: compiled, its literal
// found and its cache made once, shared by every call of the pattern.
var literalRegexps sync.Map // pattern -> literalRegexp

// compileLiteral returns the shared literalRegexp of pattern.
func compileLiteral(pattern string) (literalRegexp, error) {
	if r, ok := literalRegexps.Load(pattern); ok {
		return r.(literalRegexp), nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return literalRegexp{}, err
	}
	r, _ := literalRegexps.LoadOrStore(pattern, literalRegexp{re, requiredLiteral(pattern), new(atomic.Pointer[submatches])})
	return r.(literalRegexp), nil
}

// cannot reports whether s certainly has no match.
func (r literalRegexp) cannot(s string) bool { return r.lit != "" && !strings.Contains(s, r.lit) }

func (r literalRegexp) MatchString(s string) bool {
	return !r.cannot(s) && r.Regexp.MatchString(s)
}

func (r literalRegexp) FindStringSubmatch(s string) []string {
	if r.cannot(s) {
		return nil
	}
	if l := r.last.Load(); l != nil && l.in == s {
		return l.m
	}
	m := r.Regexp.FindStringSubmatch(s)
	r.last.Store(&submatches{in: s, m: m})
	return m
}

func (r literalRegexp) ReplaceAllString(s, repl string) string {
	if r.cannot(s) {
		return s
	}
	return r.Regexp.ReplaceAllString(s, repl)
}
