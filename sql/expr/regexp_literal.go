package expr

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
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
		if re.Flags&syntax.FoldCase != 0 || !spellable(re.Rune) {
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
			if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 && spellable(sub.Rune) {
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

// spellable reports whether the runes match exactly the bytes of their
// UTF-8 encoding (spellableRune).
func spellable(rs []rune) bool {
	for _, r := range rs {
		if !spellableRune(r) {
			return false
		}
	}
	return true
}

// spellableRune reports whether r matches exactly the bytes of its UTF-8
// encoding: not U+FFFD, which Go's regexp matches on an invalid byte too,
// nor a rune no string decodes to (a surrogate).
func spellableRune(r rune) bool { return r != utf8.RuneError && utf8.ValidRune(r) }

// literalRegexp is a compiled pattern with its required literal, and the
// last submatches found with the pattern. A statement that calls
// REGEXP_EXTRACT(x, p) in its WHERE and again in its SELECT (Nexmark q21)
// asks the same of the same string twice a row: the second call finds
// the first's answer there (a one-entry cache shared by the calls of one
// pattern, as a Calc's common subexpression; its entries are immutable,
// so the subtasks that share it need no lock).
//
// A pattern in fastMatcher's subset (regexp_fast.go) is matched by it,
// Go's regexp answering only the calls where it gives up; it needs no
// cache (the second call of a row costs a strings.Index), so it keeps
// none: a row's answer is not written to memory the subtasks share.
type literalRegexp struct {
	*regexp.Regexp
	lit  string
	last *atomic.Pointer[submatches]
	fast *fastMatcher
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
	lr, err := newLiteralRegexp(pattern)
	if err != nil {
		return literalRegexp{}, err
	}
	r, _ := literalRegexps.LoadOrStore(pattern, lr)
	return r.(literalRegexp), nil
}

// newLiteralRegexp compiles pattern, for one call (a row's pattern).
func newLiteralRegexp(pattern string) (literalRegexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return literalRegexp{}, err
	}
	return literalRegexp{re, requiredLiteral(pattern), new(atomic.Pointer[submatches]), compileFast(pattern)}, nil
}

// cannot reports whether s certainly has no match. A fastMatcher looks
// for its literal itself: for its pattern, cannot is asked only when it
// gave up.
func (r literalRegexp) cannot(s string) bool { return r.lit != "" && !strings.Contains(s, r.lit) }

func (r literalRegexp) MatchString(s string) bool {
	if r.fast != nil {
		if m, ok := r.fast.matchString(s); ok {
			return m
		}
	}
	return !r.cannot(s) && r.Regexp.MatchString(s)
}

// Group is FindStringSubmatch(s)[g], found false when s has no match or
// the pattern no group g.
func (r literalRegexp) Group(s string, g int) (v string, found bool) {
	if g < 0 || g > r.NumSubexp() {
		return "", false
	}
	if r.fast != nil {
		if v, found, ok := r.fast.group(s, g); ok {
			return v, found
		}
	}
	m := r.FindStringSubmatch(s) // cannot first
	if m == nil {
		return "", false
	}
	return m[g], true
}

func (r literalRegexp) FindStringIndex(s string) []int {
	if r.fast != nil {
		if loc, ok := r.fast.findIndex(s, false); ok {
			return loc
		}
	}
	if r.cannot(s) {
		return nil
	}
	return r.Regexp.FindStringIndex(s)
}

func (r literalRegexp) FindAllStringIndex(s string, n int) [][]int {
	return r.findAll(s, n, false)
}

func (r literalRegexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return r.findAll(s, n, true)
}

// findAll is FindAllStringSubmatchIndex (groups) or FindAllStringIndex.
func (r literalRegexp) findAll(s string, n int, groups bool) [][]int {
	if r.fast != nil && n < 0 {
		if all, ok := r.fast.allIndex(s, groups); ok {
			return all
		}
	}
	switch {
	case r.cannot(s):
		return nil
	case groups:
		return r.Regexp.FindAllStringSubmatchIndex(s, n)
	}
	return r.Regexp.FindAllStringIndex(s, n)
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
	if r.fast != nil {
		expand := func(dst []byte, m []int) []byte { return append(dst, repl...) }
		if strings.Contains(repl, "$") {
			expand = func(dst []byte, m []int) []byte { return r.ExpandString(dst, repl, s, m) }
		}
		if out, ok := r.fast.replaceAll(s, expand); ok {
			return out
		}
	}
	if r.cannot(s) {
		return s
	}
	return r.Regexp.ReplaceAllString(s, repl)
}
