package expr

import (
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// TestDateFormatPeriodCache: DATE_FORMAT with a pattern whose finest
// field is the day, hour, minute or second formats once per such period
// (the last one kept); its results equal formatting every instant, in
// and out of time order, before and after 1970.
func TestDateFormatPeriodCache(t *testing.T) {
	for p, want := range map[string]int64{
		"yyyy-MM-dd": 86400e6, "HH:mm": 60e6, "yyyy-MM-dd HH:mm:ss": 1e6, "hh a": 3600e6,
		"HH:mm:ss.SSS": 0, "yyyy-MM-dd'T'HH:mm:ssXXX": 0, "'at' yyyy": 86400e6,
	} {
		if got := patternPeriod(p); got != want {
			t.Errorf("patternPeriod(%q) = %d, want %d", p, got, want)
		}
	}
	sc := &Scope{Cols: []Column{{Name: "ts", Type: types.Timestamp3}}}
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range []string{"yyyy-MM-dd", "HH:mm", "yyyy-MM-dd HH:mm:ss", "hh a", "HH:mm:ss.SSS"} {
		e, err := parser.ParseExpr("DATE_FORMAT(ts, '" + p + "')")
		if err != nil {
			t.Fatal(err)
		}
		cached, err := (&Compiler{Scope: sc}).Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		layout := javaLayout(p)
		us := int64(-3 * 86400e6)
		for range 5000 {
			switch r.IntN(4) {
			case 0:
				us += r.Int64N(1e6) // within a second
			case 1:
				us += r.Int64N(120e6) // across minutes
			case 2:
				us -= r.Int64N(7200e6) // back in time
			default:
				us += r.Int64N(2 * 86400e6)
			}
			got := cached.Eval([]types.Value{types.IntValue(us)}).S
			if want := microsToTime(us).Format(layout); got != want {
				t.Fatalf("%s of %d: %q, want %q", p, us, got, want)
			}
		}
	}
}

// TestOneArgumentFunctionsDoNotAllocate: a function of one argument
// (strFn1) evaluates without an allocation of its own: DATE_FORMAT of a
// period already formatted allocates nothing (its arguments did escape
// to the heap through strFn's slice, once per call).
func TestOneArgumentFunctionsDoNotAllocate(t *testing.T) {
	sc := &Scope{Cols: []Column{{Name: "ts", Type: types.Timestamp3}}}
	e, err := parser.ParseExpr("DATE_FORMAT(ts, 'yyyy-MM-dd')")
	if err != nil {
		t.Fatal(err)
	}
	x, err := (&Compiler{Scope: sc}).Compile(e)
	if err != nil {
		t.Fatal(err)
	}
	row := []types.Value{types.IntValue(1_000_000)}
	x.Eval(row)
	if n := testing.AllocsPerRun(100, func() { x.Eval(row) }); n != 0 {
		t.Errorf("DATE_FORMAT of a day already formatted: %.1f allocations, want 0", n)
	}
}

// TestConstantArgumentFunctionsDoNotAllocate: SPLIT_INDEX with a constant
// separator and index (Nexmark q22) and REGEXP_EXTRACT of a string
// without the pattern's required literal (most of q21's) read their one
// variable argument without an argument slice, and allocate nothing.
func TestConstantArgumentFunctionsDoNotAllocate(t *testing.T) {
	sc := &Scope{Cols: []Column{{Name: "url", Type: types.StringType}}}
	row := []types.Value{types.StringValue("https://www.nexmark.com/abc/def/ghi/item.htm?query=1")}
	for _, src := range []string{"SPLIT_INDEX(url, '/', 4)", "REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)"} {
		e, err := parser.ParseExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		x, err := (&Compiler{Scope: sc}).Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		x.Eval(row)
		if n := testing.AllocsPerRun(100, func() { x.Eval(row) }); n != 0 {
			t.Errorf("%s: %.1f allocations, want 0", src, n)
		}
	}
}
