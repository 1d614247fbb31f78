package nexmarksql

import (
	"strings"
	"unicode/utf16"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/types"
)

// CountCharClass is the class name of Nexmark's Java UDF count_char,
// which Flink's q14 file creates: CREATE FUNCTION count_char AS
// 'com.github.nexmark.flink.udf.CountChar'. Importing this package
// registers its Go twin under that name, so the file runs unchanged.
const CountCharClass = "com.github.nexmark.flink.udf.CountChar"

// CountChar is count_char(s, c): how many of s's characters are c's first
// character, as Nexmark's CountChar.eval counts them — over Java's UTF-16
// code units, with 0 for a NULL s. (Java would throw on an empty or NULL
// c; this gives 0 for those.)
var CountChar = &expr.ScalarFunction{
	Args:       []types.Type{types.StringType, types.StringType},
	Returns:    types.Type{Kind: types.BigInt, NotNull: true},
	CallOnNull: true,
	Eval: func(args []types.Value) (types.Value, error) {
		s, c := args[0], args[1]
		if s.Null || c.Null || c.S == "" {
			return types.IntValue(0), nil
		}
		if c.S[0] < 0x80 {
			// an ASCII character: a UTF-8 byte below 0x80 is that
			// character and no other's part, and a character above
			// U+FFFF is two surrogates (0xD800 and up): count bytes
			return types.IntValue(int64(strings.Count(s.S, c.S[:1]))), nil
		}
		want := firstUnit(c.S)
		var n int64
		for _, r := range s.S {
			if r < 0x10000 {
				if uint16(r) == want {
					n++
				}
				continue
			}
			hi, lo := utf16.EncodeRune(r)
			if uint16(hi) == want {
				n++
			}
			if uint16(lo) == want {
				n++
			}
		}
		return types.IntValue(n), nil
	},
}

// firstUnit is Java's s.charAt(0): the first UTF-16 code unit.
func firstUnit(s string) uint16 {
	for _, r := range s {
		if r < 0x10000 {
			return uint16(r)
		}
		hi, _ := utf16.EncodeRune(r)
		return uint16(hi)
	}
	return 0
}

func init() { expr.RegisterClass(CountCharClass, CountChar) }
