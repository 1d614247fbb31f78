package postgrescdc

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/sql/types"
)

// DECIMAL is read exactly: trailing zeros beyond the scale are fine, other
// digits, overflow, NaN and infinities are errors.
func TestParseDecimal(t *testing.T) {
	for _, c := range []struct {
		in   string
		p, s int
		want string // the unscaled value, or "error: ..." text
	}{
		{"12.5", 5, 2, "1250"}, {"-0.01", 5, 2, "-1"}, {"1.500", 5, 2, "150"}, {"0", 5, 2, "0"},
		{"999.99", 5, 2, "99999"}, {"1000.00", 5, 2, "error: does not fit DECIMAL(5, 2)"},
		{"1.005", 5, 2, "error: more than 2 fractional digits"}, {"NaN", 5, 2, "error: not a finite number"},
		{"Infinity", 5, 2, "error: not a finite number"}, {"42", 5, 0, "42"},
		{"-12345678901234567890.1234", 30, 4, "-123456789012345678901234"},
	} {
		v, err := parseDecimal([]byte(c.in), c.p, c.s)
		var got string
		switch {
		case err != nil:
			got = "error: " + err.Error()
		case v.X != nil:
			got = v.BigInt().String()
		default:
			got = strconv.FormatInt(v.I, 10)
		}
		if !strings.HasPrefix(c.want, "error: ") && got != c.want || strings.HasPrefix(c.want, "error: ") && !strings.Contains(got, strings.TrimPrefix(c.want, "error: ")) {
			t.Errorf("%s as DECIMAL(%d, %d): got %s, want %s", c.in, c.p, c.s, got, c.want)
		}
	}
}

// timestamptz text carries the session zone's offset, in hours, minutes
// or seconds: all give the same instant.
func TestParseTimestamptz(t *testing.T) {
	want := time.Date(2024, 1, 2, 3, 4, 5, 678000000, time.UTC).UnixMicro()
	for _, in := range []string{"2024-01-02 03:04:05.678+00", "2024-01-02 08:34:05.678+05:30", "2024-01-01 22:04:05.678-05",
		"2024-01-02 03:57:33.678+00:53:28"} {
		v, err := parseTimestamptz([]byte(in))
		if err != nil || v.I != want {
			t.Errorf("%s: got %d (%v), want %d", in, v.I, err, want)
		}
	}
	if _, err := parseTimestamptz([]byte("infinity")); err == nil {
		t.Error("infinity read")
	}
}

func TestParseArray(t *testing.T) {
	elem, _ := converter(types.StringType, oidText)
	v, err := parseArray([]byte(`{"a,b","c\"d",NULL,"NULL",e}`), elem)
	if err != nil {
		t.Fatal(err)
	}
	l := v.List()
	if len(l) != 5 || l[0].S != "a,b" || l[1].S != `c"d` || !l[2].Null || l[3].S != "NULL" || l[4].S != "e" {
		t.Fatalf("%+v", l)
	}
	for _, bad := range []string{`{{1,2},{3,4}}`, `[0:1]={1,2}`, `{"a`} {
		if _, err := parseArray([]byte(bad), elem); err == nil {
			t.Errorf("%s read", bad)
		}
	}
	if v, err := parseArray([]byte(`{}`), elem); err != nil || len(v.List()) != 0 {
		t.Errorf("empty: %v %v", v, err)
	}
}
