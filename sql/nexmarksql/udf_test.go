package nexmarksql

import (
	"math/rand/v2"
	"testing"
	"unicode/utf16"

	"github.com/weirstream/weir/sql/types"
)

// TestCountCharMatchesJava: count_char counts the UTF-16 code units of s
// equal to c's first, as Nexmark's Java CountChar does; the byte count it
// takes for an ASCII c gives that count too, over strings of ASCII,
// two-, three- and four-byte characters (two units in Java) and invalid
// UTF-8 (which Java would never see: each bad byte reads as U+FFFD). The
// model is Java's loop over the string's UTF-16 units.
func TestCountCharMatchesJava(t *testing.T) {
	pieces := []string{"c", "a", "cc", "é", "ç", "€", "𝄞", "\xff", "\xe2\x82", "C", " ", "\x00", "ĉ"}
	model := func(s, c string) int64 {
		if c == "" {
			return 0
		}
		want := utf16.Encode([]rune(c))[0]
		var n int64
		for _, u := range utf16.Encode([]rune(s)) {
			if u == want {
				n++
			}
		}
		return n
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		s := ""
		for n := rng.IntN(40); n > 0; n-- {
			s += pieces[rng.IntN(len(pieces))]
		}
		for _, c := range []string{"c", "cx", "\x00", "é", "𝄞", "€", "", "\xff"} {
			got, err := CountChar.Eval([]types.Value{types.StringValue(s), types.StringValue(c)})
			if err != nil {
				t.Fatal(err)
			}
			if want := model(s, c); got.I != want {
				t.Fatalf("count_char(%q, %q) = %d, Java's count is %d", s, c, got.I, want)
			}
		}
	}
}
