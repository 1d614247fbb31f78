package expr

import (
	"strings"

	"github.com/weirstream/weir/sql/types"
)

// LOWER(x) = 'constant' (Nexmark q21 compares lower(channel) with four
// names, in its CASE and again in its WHERE): strings.ToLower scans x and
// makes a new string when x has an upper-case letter, for each
// comparison. Against an ASCII constant the comparison can walk x's bytes
// instead: up to x's first non-ASCII byte, ToLower(x) is x with A-Z
// mapped to a-z, byte for byte, so a difference there decides; only an x
// with a non-ASCII byte where the walk reaches it (whose folding may
// change its length: the Kelvin sign folds to 'k') is folded as before.

// foldOf is LOWER(arg) or UPPER(arg).
type foldOf struct {
	arg   EvalFn
	upper bool
}

// foldCompare is LOWER/UPPER(x) = c (<> when not), or nil when c is not
// ASCII.
func foldCompare(f *foldOf, c string, not bool) predFn {
	if !allASCII([]string{c}) {
		return nil
	}
	arg, upper := f.arg, f.upper
	eq, ne := triTrue, triFalse
	if not {
		eq, ne = ne, eq
	}
	return func(row []types.Value) tri {
		a := arg(row)
		if a.Null {
			return triNull
		}
		if foldEqual(a.S, c, upper) {
			return eq
		}
		return ne
	}
}

// foldEqual reports whether strings.ToLower(s) == c (ToUpper when upper),
// c ASCII.
func foldEqual(s, c string, upper bool) bool {
	lo, hi := byte('A'), byte('Z')
	if upper {
		lo, hi = 'a', 'z'
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x80 {
			// the rest may fold to other lengths
			if upper {
				return strings.ToUpper(s) == c
			}
			return strings.ToLower(s) == c
		}
		if i >= len(c) {
			continue // longer than c: unequal, unless a non-ASCII byte follows
		}
		if lo <= b && b <= hi {
			b ^= 0x20
		}
		if b != c[i] {
			return false
		}
	}
	return len(s) == len(c)
}
