package expr

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A matcher for the common shapes of regular expressions: a sequence of
// literals, character classes and their repetitions, small alternations
// of literals and ^/$, and capture groups around them (Nexmark q21's
// '(&|^)channel_id=([^&]*)', 'id=(\d+)', '^[a-z]+-(\d{2,4})$'). Go's
// regexp runs a general backtracker or NFA over every byte, about
// 0.5 µs a match for q21's urls; this one finds a literal every match
// contains with strings.Index (RE2's and Rust regex's prefilter),
// tries the few start positions that the bounded part before it allows,
// and matches forward without backtracking into repetitions.
//
// The answers are exactly Go regexp's (leftmost-first, the same submatch
// positions, the same UTF-8 decoding: an invalid byte is U+FFFD of width
// 1, and a match starts only where decoding from the start of the
// string puts a rune). That holds because the compiler accepts a
// repetition of a class C only where a backtracker could never use fewer
// repetitions than the most the input allows: what follows the
// repetition cannot start with a rune of C, nor match the empty string at
// the beginning of the text (^) where the repetition may match nothing; or
// it can match the empty string anywhere, so the first branch tried (the
// most repetitions, greedy; the fewest, non-greedy) succeeds. Then the
// only choice points left are alternations, tried in order. Everything
// else is left to Go's regexp: compileFast returns nil.
//
// A pathological input (an occurrence of the literal on every byte, each
// followed by a long repetition) could make this quadratic where Go's
// regexp is linear; each call has a budget of bytes examined, and a call
// that exceeds it gives its answer from Go's regexp.

type fastOp uint8

const (
	fastLit      fastOp = iota // lit, at pos
	fastClass                  // cls, min to max times (max < 0: unbounded)
	fastAlt                    // the first alternative for which the rest matches
	fastBegin                  // pos == 0
	fastEnd                    // pos == len(s)
	fastCapOpen                // caps[2*cap] = pos
	fastCapClose               // caps[2*cap+1] = pos
)

type fastItem struct {
	op       fastOp
	lit      string
	cls      *runeSet
	min, max int
	// fewest: take the fewest repetitions (a non-greedy repetition before
	// what can match the empty string anywhere), else the most
	fewest bool
	alts   [][]fastItem // alternatives: literals, single runes, ^ and $
	cap    int
}

// runeSet is a set of runes: a table of the bytes that are ASCII runes
// in it, and the sorted ranges for the others.
type runeSet struct {
	byteIn [256]bool // ASCII: the rune; 0x80-0xFF: every non-ASCII rune is in the class
	ranges []rune    // lo, hi pairs, sorted, not overlapping
	// allHigh: every non-ASCII rune (and U+FFFD, an invalid byte's rune)
	// is in the class
	allHigh bool
	// notByte: the class is every rune but this ASCII byte, or -1
	notByte int
}

func (c *runeSet) has(r rune) bool {
	if r < utf8.RuneSelf {
		return c.byteIn[r]
	}
	if c.allHigh {
		return true
	}
	i, _ := slices.BinarySearchFunc(c.ranges, r, func(x, r rune) int { return int(x - r) })
	// ranges[i] is the first bound >= r: r is in a range when it is a
	// range's hi (i odd) or lo (equal), or between a lo and its hi (i odd)
	if i < len(c.ranges) && c.ranges[i] == r {
		return true
	}
	return i%2 == 1
}

func newFastClass(ranges []rune) *runeSet {
	c := &runeSet{ranges: ranges, notByte: -1}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < utf8.RuneSelf; r++ {
			c.byteIn[r] = true
		}
	}
	// every rune a string can decode to: not the surrogates
	c.allHigh = coversRange(ranges, utf8.RuneSelf, 0xD7FF) && coversRange(ranges, 0xE000, unicode.MaxRune)
	if c.allHigh {
		for b := utf8.RuneSelf; b < 256; b++ {
			c.byteIn[b] = true
		}
		out := -1
		for b := 0; b < utf8.RuneSelf; b++ {
			if !c.byteIn[b] {
				if out >= 0 {
					out = -2
					break
				}
				out = b
			}
		}
		if out >= 0 {
			c.notByte = out
		}
	}
	return c
}

// coversRange reports whether the ranges hold every rune of [lo, hi].
func coversRange(ranges []rune, lo, hi rune) bool {
	for i := 0; i+1 < len(ranges) && lo <= hi; i += 2 {
		if ranges[i] <= lo && ranges[i+1] >= lo {
			lo = ranges[i+1] + 1
		}
	}
	return lo > hi
}

// maxWidth is the most bytes one rune of the ranges takes in a string.
func maxWidth(ranges []rune) int {
	if len(ranges) == 0 {
		return 1
	}
	hi := ranges[len(ranges)-1]
	if hi < utf8.RuneSelf {
		return 1
	}
	if w := utf8.RuneLen(min(hi, unicode.MaxRune)); w > 0 {
		return w // U+FFFD (3 bytes) is in the class only when hi >= 0xFFFD
	}
	return 3 // hi a surrogate: below 0x10000
}

// fastMatcher is a compiled pattern in the subset.
type fastMatcher struct {
	items []fastItem
	ncap  int // capture groups, the whole match not counted
	// lit is in every match, after a part of minPre to maxPre bytes
	lit            string
	minPre, maxPre int
	rareOff        int  // the literal's byte least likely in text (rarestByte)
	anchored       bool // the pattern starts with ^: it matches at 0 only
	// scan: no literal; a match starts at a rune of start (or anywhere:
	// startAll), or at 0 or len(s)
	scan     bool
	startAll bool
	start    *runeSet
	// startHigh: a rune of start is not ASCII (a byte >= 0x80 may start
	// a match)
	startHigh bool
}

const (
	fastMaxItems  = 64
	fastMaxPaths  = 64 // product of the alternations' sizes
	fastMaxPrefix = 64 // bytes before the literal
)

// compileFast compiles pattern (Go syntax, as regexp.Compile) into a
// fastMatcher, or returns nil when it is outside the subset.
func compileFast(pattern string) *fastMatcher {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	items, ok := fastFlatten(re, nil, true)
	if !ok || len(items) > fastMaxItems {
		return nil
	}
	paths := 1
	for i := range items {
		it := &items[i]
		switch it.op {
		case fastAlt:
			paths *= len(it.alts)
			if paths > fastMaxPaths {
				return nil
			}
		case fastClass:
			if it.min == it.max {
				continue
			}
			first, canBegin, nullable := fastRest(items[i+1:])
			switch {
			case nullable: // the first branch tried matches: keep fewest
			case canBegin && it.min == 0, intersects(first, it.cls.ranges):
				return nil
			default:
				it.fewest = false // the fewest that can match is the most there are
			}
		}
	}
	m := &fastMatcher{items: items, ncap: re.MaxCap()}
	for _, it := range items {
		if it.op == fastCapOpen || it.op == fastCapClose {
			continue
		}
		m.anchored = it.op == fastBegin
		break
	}
	// the longest literal with a bounded part before it
	lo, hi := 0, 0
	for _, it := range items {
		if hi > fastMaxPrefix {
			break
		}
		if it.op == fastLit && len(it.lit) > len(m.lit) {
			m.lit, m.minPre, m.maxPre = it.lit, lo, hi
		}
		a, b := it.width()
		if b < 0 {
			break
		}
		lo, hi = lo+a, hi+b
	}
	if m.lit != "" {
		m.rareOff = rarestByte(m.lit)
	}
	if m.lit == "" && !m.anchored {
		// no literal: try the positions where a rune the pattern can
		// start with is (a pattern that matches the empty string anywhere
		// matches where the search starts)
		first, _, nullable := fastRest(items)
		m.scan = true
		m.startAll = nullable
		m.start = newFastClass(normalize(first))
		m.startHigh = len(m.start.ranges) > 0 && m.start.ranges[len(m.start.ranges)-1] >= utf8.RuneSelf
	}
	return m
}

// normalize sorts and merges lo, hi pairs.
func normalize(ranges []rune) []rune {
	type pair struct{ lo, hi rune }
	ps := make([]pair, 0, len(ranges)/2)
	for i := 0; i+1 < len(ranges); i += 2 {
		ps = append(ps, pair{ranges[i], ranges[i+1]})
	}
	slices.SortFunc(ps, func(a, b pair) int { return int(a.lo - b.lo) })
	var out []rune
	for _, p := range ps {
		if n := len(out); n > 0 && p.lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], p.hi)
			continue
		}
		out = append(out, p.lo, p.hi)
	}
	return out
}

// width is the fewest and most bytes the item matches (most < 0:
// unbounded).
func (it *fastItem) width() (int, int) {
	switch it.op {
	case fastLit:
		return len(it.lit), len(it.lit)
	case fastClass:
		if it.max < 0 {
			return it.min, -1
		}
		return it.min, it.max * maxWidth(it.cls.ranges)
	case fastAlt:
		lo, hi := -1, 0
		for _, a := range it.alts {
			l, h := 0, 0
			for i := range a {
				x, y := a[i].width()
				l, h = l+x, h+y
			}
			if lo < 0 || l < lo {
				lo = l
			}
			hi = max(hi, h)
		}
		return lo, hi
	}
	return 0, 0
}

// fastRest is what items can start with: the runes it can consume first,
// whether it can reach ^ before consuming, and whether it can match the
// empty string anywhere (no assertion on the way).
func fastRest(items []fastItem) (first []rune, canBegin, nullable bool) {
	asserted := false
	for k, it := range items {
		switch it.op {
		case fastLit:
			r, _ := utf8.DecodeRuneInString(it.lit)
			return append(first, r, r), canBegin, false
		case fastClass:
			first = append(first, it.cls.ranges...)
			if it.min > 0 {
				return first, canBegin, false
			}
		case fastBegin:
			canBegin, asserted = true, true
		case fastEnd:
			return first, canBegin, false
		case fastAlt:
			for _, a := range it.alts {
				f, b, n := fastRest(append(slices.Clip(a), items[k+1:]...))
				first = append(first, f...)
				canBegin = canBegin || b
				nullable = nullable || (n && !asserted)
			}
			return first, canBegin, nullable
		}
	}
	return first, canBegin, !asserted
}

// intersects reports whether two lists of lo, hi pairs (any order) share
// a rune.
func intersects(a, b []rune) bool {
	for i := 0; i+1 < len(a); i += 2 {
		for j := 0; j+1 < len(b); j += 2 {
			if a[i] <= b[j+1] && b[j] <= a[i+1] {
				return true
			}
		}
	}
	return false
}

// fastFlatten appends re's items to items; top is false inside an
// alternative, which may hold literals, single runes and ^ $ only.
func fastFlatten(re *syntax.Regexp, items []fastItem, top bool) ([]fastItem, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return items, true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			for _, r := range re.Rune {
				items = append(items, fastItem{op: fastClass, cls: newFastClass(foldRanges(r)), min: 1, max: 1})
			}
			return items, true
		}
		// a literal rune that a string's bytes cannot spell (U+FFFD
		// matches an invalid byte; a surrogate nothing) is a class
		var b []byte
		flush := func() {
			if len(b) > 0 {
				items = append(items, fastItem{op: fastLit, lit: string(b)})
				b = nil
			}
		}
		for _, r := range re.Rune {
			if !spellableRune(r) {
				flush()
				items = append(items, fastItem{op: fastClass, cls: newFastClass([]rune{r, r}), min: 1, max: 1})
				continue
			}
			b = utf8.AppendRune(b, r)
		}
		flush()
		return items, true
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return append(items, fastItem{op: fastClass, cls: newFastClass(runeRanges(re)), min: 1, max: 1}), true
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		if !top {
			return nil, false
		}
		sub := re.Sub[0]
		var ranges []rune
		switch {
		case sub.Op == syntax.OpCharClass || sub.Op == syntax.OpAnyChar || sub.Op == syntax.OpAnyCharNotNL:
			ranges = runeRanges(sub)
		case sub.Op == syntax.OpLiteral && len(sub.Rune) == 1 && sub.Flags&syntax.FoldCase != 0:
			ranges = foldRanges(sub.Rune[0])
		case sub.Op == syntax.OpLiteral && len(sub.Rune) == 1:
			ranges = []rune{sub.Rune[0], sub.Rune[0]}
		default:
			return nil, false
		}
		it := fastItem{op: fastClass, cls: newFastClass(ranges), fewest: re.Flags&syntax.NonGreedy != 0}
		switch re.Op {
		case syntax.OpStar:
			it.min, it.max = 0, -1
		case syntax.OpPlus:
			it.min, it.max = 1, -1
		case syntax.OpQuest:
			it.min, it.max = 0, 1
		default:
			it.min, it.max = re.Min, re.Max
		}
		return append(items, it), true
	case syntax.OpCapture:
		if !top {
			return nil, false
		}
		items = append(items, fastItem{op: fastCapOpen, cap: re.Cap})
		items, ok := fastFlatten(re.Sub[0], items, true)
		return append(items, fastItem{op: fastCapClose, cap: re.Cap}), ok
	case syntax.OpConcat:
		ok := true
		for _, sub := range re.Sub {
			if items, ok = fastFlatten(sub, items, top); !ok {
				return nil, false
			}
		}
		return items, true
	case syntax.OpAlternate:
		if !top {
			return nil, false
		}
		it := fastItem{op: fastAlt}
		for _, sub := range re.Sub {
			a, ok := fastFlatten(sub, nil, false)
			if !ok {
				return nil, false
			}
			it.alts = append(it.alts, a)
		}
		return append(items, it), true
	case syntax.OpBeginText:
		return append(items, fastItem{op: fastBegin}), true
	case syntax.OpEndText:
		return append(items, fastItem{op: fastEnd}), true
	}
	return nil, false
}

func runeRanges(re *syntax.Regexp) []rune {
	switch re.Op {
	case syntax.OpAnyChar:
		return []rune{0, unicode.MaxRune}
	case syntax.OpAnyCharNotNL:
		return []rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}
	}
	return re.Rune
}

// foldRanges is the runes that r matches case-insensitively, as Go's
// regexp folds: r's orbit under unicode.SimpleFold.
func foldRanges(r rune) []rune {
	rs := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		rs = append(rs, f)
	}
	slices.Sort(rs)
	out := make([]rune, 0, 2*len(rs))
	for _, x := range rs {
		out = append(out, x, x)
	}
	return out
}

// runeStart reports whether p is where a rune starts when s is decoded
// from its start as Go does (an invalid byte is a rune of width 1).
func runeStart(s string, p int) bool {
	if p == 0 || p >= len(s) || s[p]&0xC0 != 0x80 {
		return true
	}
	for b := p - 1; b >= 0 && b >= p-3; b-- {
		if s[b]&0xC0 != 0x80 {
			_, w := utf8.DecodeRuneInString(s[b:])
			return b+w <= p
		}
	}
	return true
}

// find looks for the leftmost-first match starting at from or after,
// filling caps (2 × (ncap+1) ints) as regexp's submatch indexes. It
// reports false when there is none, or when it spent budget (bytes
// examined; *budget < 0 then, and the answer is Go regexp's to give).
func (m *fastMatcher) find(s string, from int, caps []int, budget *int) bool {
	if m.anchored {
		return from == 0 && m.matchAt(s, 0, caps, budget)
	}
	if m.scan {
		for p := from; p <= len(s); p++ {
			// 0 and len(s): where ^ and $ may let a match start
			if p == 0 || p == len(s) || m.startAll || m.canStart(s, p) {
				if m.matchAt(s, p, caps, budget) {
					return true
				}
			}
			if *budget--; *budget < 0 {
				return false
			}
		}
		return false
	}
	tried := from - 1 // start positions up to tried have no match
	for at := from + m.minPre; at <= len(s); {
		i := m.index(s, at, budget)
		if i < 0 {
			return false
		}
		for p := max(i-m.maxPre, tried+1); p <= i-m.minPre; p++ {
			if runeStart(s, p) && m.matchAt(s, p, caps, budget) {
				return true
			}
			if *budget < 0 {
				return false
			}
		}
		tried = max(tried, i-m.minPre)
		at = i + 1
	}
	return false
}

func (m *fastMatcher) canStart(s string, p int) bool {
	if b := s[p]; b < utf8.RuneSelf {
		return m.start.byteIn[b]
	}
	return m.startHigh && runeStart(s, p)
}

// index is the first occurrence of lit in s at or after at, or -1. It
// looks for the literal's rarest byte with IndexByte and compares the
// literal around it (the rare-byte prefilter of Rust's memchr and regex
// crates): strings.Index looks for its first byte, and a url's "c" or
// "/" occurs on every few bytes where "channel_id="'s "_" seldom does.
func (m *fastMatcher) index(s string, at int, budget *int) int {
	rare := m.lit[m.rareOff]
	for from := at + m.rareOff; from < len(s); {
		j := strings.IndexByte(s[from:], rare)
		if j < 0 {
			*budget -= len(s) - from
			return -1
		}
		j += from
		*budget -= j - from + 1
		if i := j - m.rareOff; strings.HasPrefix(s[i:], m.lit) {
			return i
		}
		from = j + 1
	}
	return -1
}

// rarestByte is the offset of the byte of lit least likely in text: a
// byte's rank is a guess of its frequency in text, urls and logs
// (lower-case letters and digits most frequent, then the separators of
// paths and query strings; other punctuation, control and non-ASCII bytes
// least).
func rarestByte(lit string) int {
	rank := func(b byte) int {
		switch {
		case b == ' ':
			return 255
		case 'a' <= b && b <= 'z':
			return 200 + strings.IndexByte("zqjxkvbpgwyfmculdrhsnioate", b)
		case '0' <= b && b <= '9':
			return 190
		case 'A' <= b && b <= 'Z':
			return 170
		case strings.IndexByte("/.=&:-,\t\n", b) >= 0:
			return 160
		case b == '_' || b == '?' || b == ';' || b == '"' || b == '\'':
			return 120
		case b < 0x20 || b == 0x7f:
			return 20
		case b >= 0x80:
			return 60
		}
		return 100
	}
	best := 0
	for i := 1; i < len(lit); i++ {
		if rank(lit[i]) < rank(lit[best]) {
			best = i
		}
	}
	return best
}

func (m *fastMatcher) matchAt(s string, p int, caps []int, budget *int) bool {
	for i := range caps {
		caps[i] = -1
	}
	end, ok := m.match(m.items, s, p, caps, budget)
	if ok {
		caps[0], caps[1] = p, end
	}
	return ok
}

// match matches items at pos; alternatives are tried in order, each with
// the rest of items after it.
func (m *fastMatcher) match(items []fastItem, s string, pos int, caps []int, budget *int) (int, bool) {
	for k := range items {
		it := &items[k]
		switch it.op {
		case fastLit:
			if !strings.HasPrefix(s[pos:], it.lit) {
				return 0, false
			}
			pos += len(it.lit)
		case fastClass:
			var ok bool
			if pos, ok = it.repeat(s, pos, budget); !ok {
				return 0, false
			}
		case fastBegin:
			if pos != 0 {
				return 0, false
			}
		case fastEnd:
			if pos != len(s) {
				return 0, false
			}
		case fastCapOpen:
			caps[2*it.cap] = pos
		case fastCapClose:
			caps[2*it.cap+1] = pos
		case fastAlt:
			for _, a := range it.alts {
				p, ok := m.match(a, s, pos, caps, budget)
				if !ok {
					continue
				}
				if end, ok := m.match(items[k+1:], s, p, caps, budget); ok {
					return end, true
				}
				if *budget < 0 {
					return 0, false
				}
			}
			return 0, false
		}
	}
	return pos, true
}

// repeat matches the class it.min to it.max times at pos (the most, or
// the fewest when it.fewest), and returns where that ends.
func (it *fastItem) repeat(s string, pos int, budget *int) (int, bool) {
	c := it.cls
	limit := it.max
	if it.fewest {
		limit = it.min
	}
	if limit < 0 && it.min <= 1 && c.allHigh {
		// every non-ASCII byte is in the class, and an ASCII byte always
		// starts a rune: the run ends at the first ASCII byte not in it
		rest := s[pos:]
		n := len(rest)
		if c.notByte >= 0 {
			if j := strings.IndexByte(rest, byte(c.notByte)); j >= 0 {
				n = j
			}
		} else {
			for j := 0; j < len(rest); j++ {
				if !c.byteIn[rest[j]] {
					n = j
					break
				}
			}
		}
		*budget -= n
		return pos + n, n > 0 || it.min == 0
	}
	n, start := 0, pos
	for pos < len(s) && (limit < 0 || n < limit) {
		if b := s[pos]; b < utf8.RuneSelf {
			if !c.byteIn[b] {
				break
			}
			pos++
		} else {
			r, w := utf8.DecodeRuneInString(s[pos:])
			if !c.has(r) {
				break
			}
			pos += w
		}
		n++
	}
	*budget -= pos - start
	return pos, n >= it.min
}

// The calls: each reports ok = false when it gave up (the caller asks Go's
// regexp).

func (m *fastMatcher) budget(s string) int { return 256 + 8*len(s) }

// capsBuf is caps for up to 15 groups without allocating.
type capsBuf [32]int

func (m *fastMatcher) caps(buf *capsBuf) []int {
	if n := 2 * (m.ncap + 1); n <= len(buf) {
		return buf[:n]
	}
	return make([]int, 2*(m.ncap+1))
}

// matchString is regexp's MatchString.
func (m *fastMatcher) matchString(s string) (matched, ok bool) {
	var buf capsBuf
	budget := m.budget(s)
	found := m.find(s, 0, m.caps(&buf), &budget)
	return found, budget >= 0
}

// group is FindStringSubmatch(s)[g] without the slice: "" for a group
// that did not take part; found is false when there is no match.
func (m *fastMatcher) group(s string, g int) (v string, found, ok bool) {
	var buf capsBuf
	caps := m.caps(&buf)
	budget := m.budget(s)
	if !m.find(s, 0, caps, &budget) {
		return "", false, budget >= 0
	}
	if g < 0 || 2*g+1 >= len(caps) || caps[2*g] < 0 {
		return "", true, true
	}
	return s[caps[2*g]:caps[2*g+1]], true, true
}

// findIndex is regexp's FindStringSubmatchIndex (with groups) or
// FindStringIndex.
func (m *fastMatcher) findIndex(s string, groups bool) (loc []int, ok bool) {
	caps := make([]int, 2*(m.ncap+1))
	budget := m.budget(s)
	if !m.find(s, 0, caps, &budget) {
		return nil, budget >= 0
	}
	if !groups {
		caps = caps[:2:2]
	}
	return caps, true
}

// allIndex is regexp's FindAllStringSubmatchIndex(s, -1) (with groups) or
// FindAllStringIndex(s, -1): the same walk as regexp's allMatches.
func (m *fastMatcher) allIndex(s string, groups bool) (all [][]int, ok bool) {
	budget := m.budget(s)
	for pos, prevEnd := 0, -1; pos <= len(s); {
		caps := make([]int, 2*(m.ncap+1))
		if !m.find(s, pos, caps, &budget) {
			if budget < 0 {
				return nil, false
			}
			break
		}
		accept := true
		if caps[1] == pos {
			// an empty match: not right after the previous match
			if caps[0] == prevEnd {
				accept = false
			}
			if pos < len(s) {
				_, w := utf8.DecodeRuneInString(s[pos:])
				pos += w
			} else {
				pos = len(s) + 1
			}
		} else {
			pos = caps[1]
		}
		prevEnd = caps[1]
		if accept {
			if !groups {
				caps = caps[:2:2]
			}
			all = append(all, caps)
		}
	}
	return all, true
}

// replaceAll is regexp's ReplaceAllString with expand writing a match's
// replacement: the same walk as regexp's replaceAll. s itself when
// nothing matches.
func (m *fastMatcher) replaceAll(s string, expand func(dst []byte, match []int) []byte) (string, bool) {
	var buf capsBuf
	caps := m.caps(&buf)
	budget := m.budget(s)
	var out []byte
	last, search, matched := 0, 0, false
	for search <= len(s) {
		if !m.find(s, search, caps, &budget) {
			if budget < 0 {
				return "", false
			}
			break
		}
		matched = true
		out = append(out, s[last:caps[0]]...)
		// no replacement for an empty match right after another
		if caps[1] > last || caps[0] == 0 {
			out = expand(out, caps)
		}
		last = caps[1]
		_, w := utf8.DecodeRuneInString(s[search:])
		switch {
		case search+w > caps[1]:
			search += w
		case search+1 > caps[1]:
			search++
		default:
			search = caps[1]
		}
	}
	if !matched {
		return s, true
	}
	return string(append(out, s[last:]...)), true
}
