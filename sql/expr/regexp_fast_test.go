package expr

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// patternGen writes a random pattern of fastMatcher's subset (and some
// just outside it) from src: each choice reads a byte, 0 once src is
// used up, so a fuzzer's bytes are a pattern.
type patternGen struct{ src []byte }

func (g *patternGen) pick(n int) int {
	if len(g.src) == 0 {
		return 0
	}
	b := g.src[0]
	g.src = g.src[1:]
	return int(b) % n
}

var (
	genLiterals = []string{"a", "b", "ab", "é", "世", "&", "=", "x", `\n`, `\x{FFFD}`, "(?i:k)", "(?i:ab)", "id=", `\.`}
	genClasses  = []string{"[a-c]", "[^a]", ".", "[^&]", `\d`, "[é-世]", `[^\x00-\x7f]`, `\pL`, "(?s:.)", "[ab&]", "[^b]", `[\x{FFFD}]`, `\w`}
	genReps     = []string{"*", "+", "?", "{2}", "{1,3}", "{0,2}", "*?", "+?", "??", "{2,}", "{1,2}?"}
	genAltParts = []string{"a", "b", "&", "^", "$", "", "xy", "[ab]", "é", "世界", `\d`}
)

func (g *patternGen) pattern() string {
	var b strings.Builder
	if g.pick(4) == 0 {
		b.WriteString("^")
	}
	g.items(&b, 1+g.pick(5), 0)
	if g.pick(4) == 0 {
		b.WriteString("$")
	}
	return b.String()
}

func (g *patternGen) items(b *strings.Builder, n, depth int) {
	for range n {
		switch k := g.pick(10); {
		case k < 3:
			b.WriteString(genLiterals[g.pick(len(genLiterals))])
		case k < 5:
			b.WriteString(genClasses[g.pick(len(genClasses))])
		case k < 7:
			atoms := genClasses
			if g.pick(3) == 0 {
				atoms = []string{"a", "b", "é", "&", "(?i:k)"}
			}
			b.WriteString(atoms[g.pick(len(atoms))])
			b.WriteString(genReps[g.pick(len(genReps))])
		case k < 8 && depth < 2:
			b.WriteString("(")
			g.items(b, 1+g.pick(3), depth+1)
			b.WriteString(")")
		default:
			b.WriteString([]string{"(", "(?:"}[g.pick(2)])
			for i := range 2 + g.pick(2) {
				if i > 0 {
					b.WriteString("|")
				}
				b.WriteString(genAltParts[g.pick(len(genAltParts))])
				if g.pick(3) == 0 {
					b.WriteString(genAltParts[g.pick(len(genAltParts))])
				}
			}
			b.WriteString(")")
		}
	}
}

var genInputs = []string{"a", "b", "c", "é", "世", "&", "=", "x", "y", "\n", "\xff", "\xe4\xb8", "\x80", "k", "K", "\u212a", "1", "ab", "id=", ".", "\uFFFD", "channel_id="}

func randomInput(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(12); n > 0; n-- {
		b.WriteString(genInputs[r.IntN(len(genInputs))])
	}
	return b.String()
}

// checkFast compares every call of pattern's fastMatcher (that did not
// give up: its budget), and of its literalRegexp, with Go's regexp on s;
// it reports whether the pattern is in the subset.
func checkFast(t testing.TB, pattern, s string) bool {
	t.Helper()
	re, err := regexp.Compile(pattern)
	if err != nil {
		return false
	}
	m := compileFast(pattern)
	if m == nil {
		return false
	}
	fail := func(call string, got, want any) {
		t.Helper()
		t.Fatalf("%#q on %q: %s = %v, want %v (regexp)", pattern, s, call, got, want)
	}
	if got, ok := m.matchString(s); ok && got != re.MatchString(s) {
		fail("MatchString", got, re.MatchString(s))
	}
	if got, ok := m.findIndex(s, true); ok && !reflect.DeepEqual(got, re.FindStringSubmatchIndex(s)) {
		fail("FindStringSubmatchIndex", got, re.FindStringSubmatchIndex(s))
	}
	if got, ok := m.findIndex(s, false); ok && !reflect.DeepEqual(got, re.FindStringIndex(s)) {
		fail("FindStringIndex", got, re.FindStringIndex(s))
	}
	if got, ok := m.allIndex(s, true); ok && !reflect.DeepEqual(got, re.FindAllStringSubmatchIndex(s, -1)) {
		fail("FindAllStringSubmatchIndex", got, re.FindAllStringSubmatchIndex(s, -1))
	}
	if got, ok := m.allIndex(s, false); ok && !reflect.DeepEqual(got, re.FindAllStringIndex(s, -1)) {
		fail("FindAllStringIndex", got, re.FindAllStringIndex(s, -1))
	}
	want := re.FindStringSubmatch(s)
	for g := -1; g <= re.NumSubexp()+1; g++ {
		v, found, ok := m.group(s, g)
		if ok && (found != (want != nil) || (want != nil && g >= 0 && g < len(want) && v != want[g])) {
			fail("group "+string(rune('0'+g)), v, want)
		}
	}
	lr, err := newLiteralRegexp(pattern)
	if err != nil {
		t.Fatal(err)
	}
	for _, repl := range []string{"<$1>", "-", "", "${0}$0"} {
		if got, want := lr.ReplaceAllString(s, repl), re.ReplaceAllString(s, repl); got != want {
			fail("ReplaceAllString "+repl, got, want)
		}
	}
	if got, want := lr.MatchString(s), re.MatchString(s); got != want {
		fail("literalRegexp.MatchString", got, want)
	}
	if got, want := lr.FindAllStringSubmatchIndex(s, -1), re.FindAllStringSubmatchIndex(s, -1); !reflect.DeepEqual(got, want) {
		fail("literalRegexp.FindAllStringSubmatchIndex", got, want)
	}
	for g := 0; g <= re.NumSubexp(); g++ {
		v, found := lr.Group(s, g)
		if found != (want != nil) || (found && v != want[g]) {
			fail("literalRegexp.Group", v, want)
		}
	}
	return true
}

// TestFastRegexpShapes: the common shapes are in the subset, and the
// ones whose answers it could not give exactly are not.
func TestFastRegexpShapes(t *testing.T) {
	for _, p := range []string{
		`(&|^)channel_id=([^&]*)`, `channel_id=([^&]*)`, `id=(\d+)`, `^[a-z]+-(\d{2,4})$`,
		`(\w+)@example\.com`, `^https?://([^/]+)/`, `(?i)error: (.*)`, `a.b`, `^$`, `[0-9]+\.[0-9]+`,
		`key=([^;]*?);`, `x(ab|cd|)y`, `[0-9]+`, `\pL+`, `(?:^|,)name=([^,]*)`, `\x{FFFD}x`,
	} {
		if compileFast(p) == nil {
			t.Errorf("%#q: not in the subset", p)
		}
	}
	for _, p := range []string{
		`a*a`,          // backtracking into a repetition
		`[a-z]*abc`,    // the same
		`(ab)*c`,       // a repetition of more than one rune
		`\bfoo`,        // word boundary
		`(?m)^foo`,     // line anchors
		`a*^b`,         // ^ after a repetition that can match nothing
		`(a|b*)c`,      // a repetition in an alternative
		`.*channel_id`, // unbounded part before the only literal; and backtracking
	} {
		if compileFast(p) != nil {
			t.Errorf("%#q: in the subset", p)
		}
	}
}

// TestFastRegexpDifferential: random patterns of the subset on random
// inputs give Go regexp's answers, in every call.
func TestFastRegexpDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 39))
	patterns, fast := 0, 0
	// 4,000 patterns take 38 s under the race detector (the test
	// command's build), 800 about 8; the fuzzers and a plain build take
	// more
	n := 4000
	if raceEnabled {
		n = 800
	}
	for range n {
		src := make([]byte, 24)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		g := patternGen{src}
		p := g.pattern()
		patterns++
		in := false
		for range 40 {
			in = checkFast(t, p, randomInput(r))
		}
		if in {
			fast++
		}
	}
	// the generator's patterns must mostly be in the subset for the test
	// to test it
	if fast < patterns/4 {
		t.Fatalf("only %d of %d patterns in the subset", fast, patterns)
	}
	t.Logf("%d of %d patterns in the subset", fast, patterns)
	// the documented shapes on inputs of their own alphabet
	for _, p := range []string{`(&|^)channel_id=([^&]*)`, `id=(\d+)`, `^[a-z]+-(\d{2,4})$`, `(?i)error: (.*)`, `key=([^;]*?);`} {
		for range 2000 {
			checkFast(t, p, randomInput(r)+[]string{"&channel_id=", "id=12", "abc-123", "ERROR: x", "key=v;", ""}[r.IntN(6)]+randomInput(r))
		}
	}
}

// TestFastRegexpBudget: a quadratic input gives up and the answers are
// Go regexp's.
func TestFastRegexpBudget(t *testing.T) {
	p := `a[^x]*x`
	m := compileFast(p)
	if m == nil {
		t.Fatal("not in the subset")
	}
	s := strings.Repeat("a", 10000)
	if _, ok := m.matchString(s); ok {
		t.Fatal("no budget: a quadratic walk")
	}
	lr, _ := newLiteralRegexp(p)
	if lr.MatchString(s) || lr.ReplaceAllString(s+"x", "-") != "-" {
		t.Fatal("the answer after giving up is not regexp's")
	}
}

// TestRequiredLiteralReplacementChar: U+FFFD in a pattern matches an
// invalid byte, so it is no required literal.
func TestRequiredLiteralReplacementChar(t *testing.T) {
	lr, err := newLiteralRegexp(`\x{FFFD}x`)
	if err != nil {
		t.Fatal(err)
	}
	if !lr.MatchString("\xffx") || !regexp.MustCompile(`\x{FFFD}x`).MatchString("\xffx") {
		t.Fatal(`\x{FFFD}x does not match "\xffx"`)
	}
}

func FuzzFastRegexp(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, "a&channel_id=12&b")
	f.Add([]byte{5, 9, 17, 33, 2, 8, 200, 7}, "é世\xffab")
	f.Add([]byte{3, 3, 3, 3, 3, 3, 3, 3, 3}, "\xe4\xb8x&&=")
	f.Add([]byte{255, 128, 64, 32, 16, 8, 4, 2, 1}, "kK\u212aab")
	f.Add([]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, "id=\n12.")
	f.Fuzz(func(t *testing.T, gen []byte, s string) {
		g := patternGen{gen}
		checkFast(t, g.pattern(), s)
	})
}

func FuzzFastRegexpPattern(f *testing.F) {
	f.Add(`(&|^)channel_id=([^&]*)`, "https://x/?a=1&channel_id=7&b")
	f.Add(`(&|^)channel_id=([^&]*)`, "channel_id=")
	f.Add(`^[a-z]+-(\d{2,4})$`, "abc-1234")
	f.Add(`x(ab|cd|)y`, "xaby xy xcdy")
	f.Add(`key=([^;]*?);`, "key=é;key=;")
	f.Add(`(?i)k+`, "\u212aKk")
	f.Add(`\x{FFFD}[^a]`, "\xe4\xb8\x96\xff")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		checkFast(t, pattern, s)
	})
}

// BenchmarkFastRegexp: the matcher against Go's regexp on q21's pattern
// and a url with and without the parameter.
func BenchmarkFastRegexp(b *testing.B) {
	const p = `(&|^)channel_id=([^&]*)`
	for _, c := range []struct{ name, s string }{
		{"hit", "https://www.nexmark.com/kx_a/ntp/yeaa/item.htm?query=1&channel_id=1342177280"},
		{"miss", "https://www.nexmark.com/kxa/ntp/yeaa/item.htm?query=1"},
	} {
		re := regexp.MustCompile(p)
		m := compileFast(p)
		b.Run(c.name+"/regexp", func(b *testing.B) {
			for b.Loop() {
				_ = re.FindStringSubmatch(c.s)
			}
		})
		b.Run(c.name+"/fast", func(b *testing.B) {
			for b.Loop() {
				_, _, _ = m.group(c.s, 2)
			}
		})
	}
}

// TestRegexpExtractHitDoesNotAllocate: REGEXP_EXTRACT of a string that
// has the match (q21's urls with a channel_id) allocates nothing: the
// matcher's positions are on the stack and the group is a substring.
func TestRegexpExtractHitDoesNotAllocate(t *testing.T) {
	sc := &Scope{Cols: []Column{{Name: "url", Type: types.StringType}}}
	row := []types.Value{types.StringValue("https://www.nexmark.com/abc/def/ghi/item.htm?query=1&channel_id=1342177280")}
	e, err := parser.ParseExpr("REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)")
	if err != nil {
		t.Fatal(err)
	}
	x, err := (&Compiler{Scope: sc}).Compile(e)
	if err != nil {
		t.Fatal(err)
	}
	if v := x.Eval(row); v.S != "1342177280" {
		t.Fatalf("REGEXP_EXTRACT = %v", v)
	}
	// two urls in turn: no answer kept from the call before
	rows := [][]types.Value{row, {types.StringValue("https://www.nexmark.com/abc/item.htm?channel_id=7&query=1")}}
	i := 0
	if n := testing.AllocsPerRun(100, func() { x.Eval(rows[i%2]); i++ }); n != 0 {
		t.Errorf("%.1f allocations, want 0", n)
	}
}
