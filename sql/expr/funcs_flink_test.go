package expr

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/types"
)

// TestJavaRandom checks javaRandom against java.util.Random's values for
// the same seeds (new Random(0).nextDouble(), new Random(42).nextInt(),
// new Random(42).nextInt(10)).
func TestJavaRandom(t *testing.T) {
	if got := newJavaRandom(0).nextDouble(); got != 0.730967787376657 {
		t.Errorf("new Random(0).nextDouble() = %v, want 0.730967787376657", got)
	}
	if got := newJavaRandom(42).next(32); got != -1170105035 {
		t.Errorf("new Random(42).nextInt() = %v, want -1170105035", got)
	}
	if got := newJavaRandom(42).nextInt(10); got != 0 {
		t.Errorf("new Random(42).nextInt(10) = %v, want 0", got)
	}
	r := newJavaRandom(1)
	for range 1000 {
		if v := r.nextInt(7); v < 0 || v >= 7 {
			t.Fatalf("nextInt(7) = %d", v)
		}
	}
}

func TestIsJavaDouble(t *testing.T) {
	for s, want := range map[string]bool{
		"1": true, "-1.5": true, "+.5": true, "1.": true, "1e10": true, "1E-3": true, " 2 ": true, "1.5f": true, "2d": true,
		"NaN": true, "-Infinity": true, "": false, ".": false, "e5": false, "1e": false, "1.5.": false, "abc": false,
		"inf": false, "nan": false, "0x10": false, "1_000": false,
	} {
		if got := isJavaDouble(s); got != want {
			t.Errorf("isJavaDouble(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestTruncateFloat(t *testing.T) {
	for _, c := range []struct {
		f    float64
		d    int
		want float64
	}{
		{42.326, 2, 42.32}, {-0.35, 1, -0.3}, {0.29, 2, 0.29}, {1234.5, -2, 1200}, {9.99, 0, 9}, {0.001, 2, 0}, {1e20, 0, 1e20},
	} {
		if got := truncateFloat(c.f, c.d, 64); got != c.want {
			t.Errorf("truncateFloat(%v, %d) = %v, want %v", c.f, c.d, got, c.want)
		}
	}
}

// TestSplitIndex: splitIndex is strings.Split's part n, without
// allocating.
func TestSplitIndex(t *testing.T) {
	for _, s := range []string{"", "/", "a", "a/b", "/a//b/", "https://www.nexmark.com/x/y/z/item.htm", "ab::cd::::ef"} {
		for _, sep := range []string{"/", "::", "", "x"} {
			parts := strings.Split(s, sep)
			for n := int64(0); n < 8; n++ {
				got, ok := splitIndex(s, sep, n)
				if want, wok := "", n < int64(len(parts)); ok != wok || (ok && got != parts[n]) {
					if wok {
						want = parts[n]
					}
					t.Fatalf("splitIndex(%q, %q, %d) = %q, %v; want %q, %v", s, sep, n, got, ok, want, wok)
				}
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { splitIndex("https://www.nexmark.com/x/y/z/item.htm", "/", 4) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// TestExtractTimeOfDay: HOUR, MINUTE and SECOND by arithmetic equal
// time.Time's, before 1970 too.
func TestExtractTimeOfDay(t *testing.T) {
	for _, us := range []int64{0, 1, -1, 86399999999, -86400000001, 1717171717171717, -1717171717171717, 3600e6 - 1, 59999999} {
		tm := microsToTime(us)
		for unit, want := range map[string]int{"HOUR": tm.Hour(), "MINUTE": tm.Minute(), "SECOND": tm.Second()} {
			x, err := extract(unit, konst(types.IntValue(us), types.Timestamp3, false), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := x.Eval(nil).I; got != int64(want) {
				t.Errorf("EXTRACT(%s) of %d us = %d, want %d", unit, us, got, want)
			}
		}
	}
}
