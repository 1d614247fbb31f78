package expr

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// TestRequiredLiteral: the literal found is in every match, and the
// prefiltered calls answer as the plain ones on random strings over the
// patterns' alphabet.
func TestRequiredLiteral(t *testing.T) {
	for _, c := range []struct{ pattern, lit string }{
		{`(&|^)channel_id=([^&]*)`, "channel_id="},
		{`abc`, "abc"},
		{`x(ab)+y`, "ab"},
		{`a*b`, "b"},
		{`(?i)abc`, ""},
		{`a|b`, ""},
		{`(abc){2,}`, "abc"},
		{`(abc)?d`, "d"},
		{`a.b`, "a"},
		{`^$`, ""},
	} {
		if got := requiredLiteral(c.pattern); got != c.lit {
			t.Errorf("requiredLiteral(%q) = %q, want %q", c.pattern, got, c.lit)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "c", "&", "=", "channel_id=", "x", "y", "d", "ab", "abc"}
	for _, p := range []string{`(&|^)channel_id=([^&]*)`, `x(ab)+y`, `a*b`, `(abc){2,}`, `(abc)?d`, `a.b`} {
		re := regexp.MustCompile(p)
		lr, err := compileLiteral(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3000; i++ {
			s := ""
			for n := r.IntN(8); n > 0; n-- {
				s += alphabet[r.IntN(len(alphabet))]
			}
			if lr.MatchString(s) != re.MatchString(s) || lr.ReplaceAllString(s, "<$0>") != re.ReplaceAllString(s, "<$0>") {
				t.Fatalf("%q on %q: the prefiltered call differs", p, s)
			}
			if got, want := lr.FindStringSubmatch(s), re.FindStringSubmatch(s); len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
				t.Fatalf("%q on %q: FindStringSubmatch %q, want %q", p, s, got, want)
			}
		}
	}
}
