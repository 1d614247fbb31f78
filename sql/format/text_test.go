package format_test

import (
	"testing"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func TestTimestamps(t *testing.T) {
	for _, c := range []struct {
		in   string
		p    int
		us   int64
		back string
	}{
		{"1970-01-01 00:00:00", 3, 0, "1970-01-01 00:00:00"},
		{"2020-04-15 08:05:01.123", 3, 1586937901123000, "2020-04-15 08:05:01.123"},
		{"2020-04-15T08:05:01.120Z", 3, 1586937901120000, "2020-04-15 08:05:01.12"},
		{"2020-04-15 08:05:01.123456789", 3, 1586937901123000, "2020-04-15 08:05:01.123"},
		{"1969-12-31 23:59:59.999", 3, -1000, "1969-12-31 23:59:59.999"},
		{"2000-02-29 12:00", 0, 951825600000000, "2000-02-29 12:00:00"},
	} {
		us, err := format.ParseTimestamp([]byte(c.in), c.p)
		if err != nil || us != c.us {
			t.Errorf("ParseTimestamp(%s) = %d, %v; want %d", c.in, us, err, c.us)
		}
		if got := string(format.AppendTimestamp(nil, us, c.p, ' ')); got != c.back {
			t.Errorf("AppendTimestamp(%d) = %s, want %s", us, got, c.back)
		}
	}
	for _, bad := range []string{"2021-02-29 00:00:00", "2020-01-01 24:00:00", "2020-1-01 00:00:00", "2020-01-01 00:00:00.", "2020-01-01x00:00:00"} {
		if _, err := format.ParseTimestamp([]byte(bad), 3); err == nil {
			t.Errorf("ParseTimestamp(%s) succeeded", bad)
		}
	}
}

func TestDecimal(t *testing.T) {
	d := types.DecimalType(6, 2)
	for _, c := range []struct {
		in  string
		u   int64
		out string
	}{
		{"0", 0, "0.00"}, {"1.005", 101, "1.01"}, {"-1.005", -101, "-1.01"}, {"1.004", 100, "1.00"},
		{"9999.994", 999999, "9999.99"}, {"0.05", 5, "0.05"}, {"1e2", 10000, "100.00"}, {"-.5", -50, "-0.50"},
		{"0012.5E-1", 125, "1.25"},
	} {
		v, err := format.ParseDecimal([]byte(c.in), d)
		if err != nil || v.I != c.u {
			t.Errorf("ParseDecimal(%s) = %d, %v; want %d", c.in, v.I, err, c.u)
			continue
		}
		if got := string(format.AppendDecimal(nil, v, d)); got != c.out {
			t.Errorf("AppendDecimal(%d) = %s, want %s", v.I, got, c.out)
		}
	}
	for _, bad := range []string{"9999.995", "10000", "1e5", "abc", "1.2.3", "", "-"} {
		if _, err := format.ParseDecimal([]byte(bad), d); err == nil {
			t.Errorf("ParseDecimal(%q) succeeded", bad)
		}
	}
}

func TestAppendFloatJava(t *testing.T) {
	for _, c := range []struct {
		f    float64
		bits int
		want string
	}{
		{1, 64, "1.0"}, {0.25, 64, "0.25"}, {1e7, 64, "1.0E7"}, {1.5e-4, 64, "1.5E-4"}, {-123.456, 64, "-123.456"},
		{1e300, 64, "1.0E300"}, {0.1, 32, "0.1"}, {0, 64, "0.0"},
	} {
		if got := string(format.AppendFloat(nil, c.f, c.bits)); got != c.want {
			t.Errorf("AppendFloat(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}

// TestBigDecimalCompactForm: a DECIMAL(22, 3) whose unscaled value fits an
// int64 is held in I (types.Value.X); it prints as its *big.Int form does.
func TestBigDecimalCompactForm(t *testing.T) {
	dt := types.DecimalType(22, 3)
	for _, c := range []struct {
		u    int64
		want string
	}{{112098048, "112098.048"}, {-908, "-0.908"}, {0, "0.000"}, {5, "0.005"}} {
		if got := string(format.AppendDecimal(nil, types.IntValue(c.u), dt)); got != c.want {
			t.Fatalf("compact %d prints %s, want %s", c.u, got, c.want)
		}
	}
}
