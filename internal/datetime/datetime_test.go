package datetime

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func micros(y int, mo time.Month, d, h, mi, s, ns int) int64 {
	return time.Date(y, mo, d, h, mi, s, ns, time.UTC).UnixMicro()
}

func days(y int, mo time.Month, d int) int64 { return micros(y, mo, d, 0, 0, 0, 0) / microsPerDay }

// parse runs the parser of kind k on in with forms f.
func parse(k Kind, in string, f Forms) (int64, error) {
	switch k {
	case KindDate:
		return ParseDate(in, f)
	case KindTime:
		return ParseTime(in, f)
	case KindTimestamp:
		return ParseTimestamp(in, f)
	}
	return ParseTimestampTZ(in, f)
}

// TestForms walks the rows of the table in the package documentation, with
// the edges of each: every input is read as string and as []byte.
func TestDateTimeForms(t *testing.T) {
	const (
		D  = KindDate
		T  = KindTime
		TS = KindTimestamp
		TZ = KindTimestampTZ
	)
	ts := micros(2024, 2, 29, 13, 45, 6, 0)
	for _, c := range []struct {
		k    Kind
		f    Forms
		in   string
		want int64  // when err is ""
		err  string // a part of the error
	}{
		// Dates: every caller, four-digit years, the Gregorian calendar.
		{D, SQL, "2024-02-29", days(2024, 2, 29), ""},
		{D, Format, "1970-01-01", 0, ""},
		{D, Postgres, "1969-12-31", -1, ""},
		{D, SQL, "0000-01-01", days(0, 1, 1), ""},
		{D, SQL, "9999-12-31", days(9999, 12, 31), ""},
		{D, SQL, "2000-02-29", days(2000, 2, 29), ""}, // leap: divisible by 400
		{D, SQL, "1900-02-29", 0, "day out of range"}, // not leap: by 100
		{D, SQL, "2023-02-29", 0, "day out of range"},
		{D, SQL, "2024-04-31", 0, "day out of range"},
		{D, SQL, "2024-00-10", 0, "month out of range"},
		{D, SQL, "2024-13-10", 0, "month out of range"},
		{D, SQL, "2024-01-00", 0, "day out of range"},
		{D, SQL, "2024-1-01", 0, "not in an accepted form"},
		{D, SQL, "24-01-01", 0, "not in an accepted form"},
		{D, SQL, "2024/01/01", 0, "not in an accepted form"},
		{D, SQL, "2024-01-01 ", 0, "not in an accepted form"}, // callers trim
		{D, SQL, " 2024-01-01", 0, "not in an accepted form"},
		{D, SQL, "2024-01-01 00:00:00", 0, "not in an accepted form"},
		{D, Postgres, "infinity", 0, "infinity, BC dates and years after 9999 are not supported"},
		{D, Postgres, "-infinity", 0, "not supported"},
		{D, Postgres, "0044-03-15 BC", 0, "not supported"},
		{D, Postgres, "10000-01-01", 0, "not supported"},
		{D, Postgres, "", 0, "not in an accepted form"},

		// Times of day.
		{T, Format, "13:45:06", 49506e6, ""},
		{T, Format, "13:45", 49500e6, ""},
		{T, Postgres, "13:45", 0, "not in an accepted form"},
		{T, Postgres, "7:45:06", 27906e6, ""},
		{T, Format, "7:45:06", 0, "not in an accepted form"},
		{T, Format, "00:00:00.1", 100_000, ""},
		{T, Format, "00:00:00.12", 120_000, ""},
		{T, Format, "00:00:00.123", 123_000, ""},
		{T, Format, "00:00:00.1234", 123_400, ""},
		{T, Format, "00:00:00.12345", 123_450, ""},
		{T, Format, "00:00:00.123456", 123_456, ""},
		{T, Format, "00:00:00.1234567", 123_456, ""}, // cut, not rounded
		{T, Format, "00:00:00.12345678", 123_456, ""},
		{T, Format, "00:00:00.123456789", 123_456, ""},
		{T, Format, "00:00:00.1234567891", 0, "not in an accepted form"},
		{T, Postgres, "00:00:00.1234567891", 123_456, ""},
		{T, Format, "00:00:00.", 0, "not in an accepted form"},
		{T, Format, "00:00:00,5", 0, "not in an accepted form"},
		{T, Postgres, "00:00:00,5", 500_000, ""},
		{T, Format, "23:59:59.999999", microsPerDay - 1, ""},
		{T, Format, "24:00:00", 0, "hour out of range"},
		{T, Postgres, "24:00:00", microsPerDay, ""},
		{T, Postgres, "24:00:00.000000", microsPerDay, ""},
		{T, Postgres, "24:00:00.5", 0, "hour out of range"},
		{T, Postgres, "24:00:01", 0, "hour out of range"},
		{T, Format, "12:60:00", 0, "minute out of range"},
		{T, Format, "12:00:60", 0, "second out of range"}, // no leap second
		{T, Format, "12:00:0", 0, "not in an accepted form"},
		{T, Format, "12:0", 0, "not in an accepted form"},
		{T, Format, "123:00:00", 0, "not in an accepted form"},
		{T, Format, "12:00:00Z", 0, "not in an accepted form"},
		{T, Format, "", 0, "not in an accepted form"},

		// Timestamps: separators.
		{TS, SQL, "2024-02-29 13:45:06", ts, ""},
		{TS, SQL, "2024-02-29T13:45:06", ts, ""},
		{TS, SQL, "2024-02-29   13:45:06", ts, ""},
		{TS, Format, "2024-02-29   13:45:06", 0, "not in an accepted form"},
		{TS, Format, "2024-02-29T13:45:06", ts, ""},
		{TS, Postgres, "2024-02-29T13:45:06", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29t13:45:06", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29\t13:45:06", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29_13:45:06", 0, "not in an accepted form"},
		// Date alone, minutes alone, one-digit hours.
		{TS, SQL, "2024-02-29", micros(2024, 2, 29, 0, 0, 0, 0), ""},
		{TS, Format, "2024-02-29", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29 13:45", micros(2024, 2, 29, 13, 45, 0, 0), ""},
		{TS, Format, "2024-02-29T13:45", micros(2024, 2, 29, 13, 45, 0, 0), ""},
		{TS, Postgres, "2024-02-29 13:45", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29 7:05", micros(2024, 2, 29, 7, 5, 0, 0), ""},
		{TS, Postgres, "2024-02-29 7:05:00", micros(2024, 2, 29, 7, 5, 0, 0), ""},
		{TS, Format, "2024-02-29 7:05:00", 0, "not in an accepted form"},
		// Fractions.
		{TS, SQL, "2024-02-29 13:45:06.5", ts + 500_000, ""},
		{TS, SQL, "2024-02-29 13:45:06,5", ts + 500_000, ""},
		{TS, Format, "2024-02-29 13:45:06,5", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29 13:45:06.123456789", ts + 123_456, ""},
		{TS, SQL, "2024-02-29 13:45:06.12345678912345", ts + 123_456, ""},
		{TS, Format, "2024-02-29 13:45:06.1234567891", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29 13:45.5", 0, "not in an accepted form"},
		{TS, SQL, "1969-12-31 23:59:59.999999", -1, ""},
		{TS, SQL, "0000-01-01 00:00:00", micros(0, 1, 1, 0, 0, 0, 0), ""},
		{TS, SQL, "9999-12-31 23:59:59.999999999", micros(9999, 12, 31, 23, 59, 59, 999_999_000), ""},
		// Zones.
		{TS, Format, "2024-02-29 13:45:06Z", ts, ""},
		{TS, Format, "2024-02-29 13:45Z", micros(2024, 2, 29, 13, 45, 0, 0), ""},
		{TS, Format, "2024-02-29T13:45:06.5Z", ts + 500_000, ""},
		{TS, Format, "2024-02-29T13:45:06+00:00", 0, "not in an accepted form"},
		{TS, Format, "2024-02-29Z", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29T13:45:06Z", ts, ""},
		{TS, SQL, "2024-02-29T13:45:06.5+05:30", ts + 500_000 - 19800e6, ""},
		{TS, SQL, "2024-02-29T13:45:06-05:30", ts + 19800e6, ""},
		{TS, SQL, "2024-02-29 13:45:06Z", 0, "a zone where none is accepted"}, // RFC 3339 only
		{TS, SQL, "2024-02-29T13:45Z", 0, "a zone where none is accepted"},
		{TS, SQL, "2024-02-29T13:45:06+05", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29T13:45:06+0530", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29T13:45:06z", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29T13:45:06 Z", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29T13:45:06+24:00", ts - 86400e6, ""}, // Go's time.Parse allowed these
		{TS, SQL, "2024-02-29T13:45:06+23:60", ts - 86400e6, ""},
		{TS, SQL, "2024-02-29T13:45:06+25:00", 0, "zone offset out of range"},
		{TS, SQL, "2024-02-29T13:45:06+05:61", 0, "zone offset out of range"},
		{TS, Postgres, "2024-02-29 13:45:06+05", 0, "a zone where none is accepted"},
		{TZ, PostgresTZ, "2024-02-29 13:45:06+05", ts - 18000e6, ""},
		{TZ, PostgresTZ, "2024-02-29 13:45:06-05", ts + 18000e6, ""},
		{TZ, PostgresTZ, "2024-02-29 13:45:06+05:30", ts - 19800e6, ""},
		{TZ, PostgresTZ, "2024-02-29 13:45:06+0530", ts - 19800e6, ""},
		{TZ, PostgresTZ, "2024-02-29 13:45:06.25-00:53:28", ts + 250_000 + 3208e6, ""},
		{TZ, PostgresTZ, "2024-02-29 13:45:06+00", ts, ""},
		{TZ, PostgresTZ, "2024-02-29 13:45:06Z", 0, "not in an accepted form"},
		{TZ, PostgresTZ, "2024-02-29 13:45:06+5", 0, "not in an accepted form"},
		{TZ, PostgresTZ, "2024-02-29 13:45:06+05:3", 0, "not in an accepted form"},
		{TZ, PostgresTZ, "2024-02-29 13:45:06+05:30:00:00", 0, "not in an accepted form"},
		{TZ, PostgresTZ, "2024-02-29 13:45:06+053", 0, "not in an accepted form"},
		{TZ, PostgresTZ, "2024-02-29 13:45:06", 0, "no zone offset"},
		{TZ, PostgresTZ, "infinity", 0, "not supported"},
		{TZ, PostgresTZ, "2024-02-29 13:45:06+01 BC", 0, "not supported"},
		{TZ, RFC3339, "2024-02-29T13:45:06Z", ts, ""},
		{TZ, RFC3339, "2024-02-29T13:45:06.123456789+01:00", ts + 123_456 - 3600e6, ""},
		{TZ, RFC3339, "2024-02-29T13:45:06", 0, "no zone offset"},
		{TZ, RFC3339, "2024-02-29", 0, "no zone offset"},
		{TZ, RFC3339, "2024-02-29 13:45:06Z", 0, "not in an accepted form"},
		{TZ, RFC3339, "2024-02-29T13:45Z", 0, "not in an accepted form"},
		// Out of range.
		{TS, SQL, "2023-02-29 00:00:00", 0, "day out of range"},
		{TS, SQL, "2024-02-29 24:00:00", 0, "hour out of range"},
		{TS, Postgres, "2024-02-29 24:00:00", 0, "hour out of range"}, // EndOfDay is for TIME
		{TS, SQL, "2024-02-29 23:60:00", 0, "minute out of range"},
		{TS, SQL, "2024-02-29 23:59:60", 0, "second out of range"},
		{TS, SQL, "2024-02-29 13:45:06.", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29 ", 0, "not in an accepted form"},
		{TS, SQL, "2024-02-29 13:45:06 ", 0, "not in an accepted form"},
	} {
		for _, asBytes := range []bool{false, true} {
			var got int64
			var err error
			if asBytes {
				switch c.k {
				case D:
					got, err = ParseDate([]byte(c.in), c.f)
				case T:
					got, err = ParseTime([]byte(c.in), c.f)
				case TS:
					got, err = ParseTimestamp([]byte(c.in), c.f)
				default:
					got, err = ParseTimestampTZ([]byte(c.in), c.f)
				}
			} else {
				got, err = parse(c.k, c.in, c.f)
			}
			switch {
			case c.err == "" && (err != nil || got != c.want):
				t.Errorf("%s %q (%#x): got %d, %v; want %d", c.k, c.in, uint32(c.f), got, err, c.want)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("%s %q (%#x): got %d, %v; want an error with %q", c.k, c.in, uint32(c.f), got, err, c.err)
			}
		}
	}
}

// TestErrors: an error names the input, why it was refused and the forms
// that would have been accepted.
func TestDateTimeErrors(t *testing.T) {
	_, err := ParseTimestamp([]byte("2024-13-01 00:00:00"), Format)
	want := `timestamp "2024-13-01 00:00:00": month out of range; accepted: 'yyyy-MM-dd HH:mm[:ss[.fffffffff]][Z]', 'yyyy-MM-ddTHH:mm[:ss[.fffffffff]][Z]'`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	var e *Error
	if _, err := ParseTimestampTZ("soon", PostgresTZ); !errors.As(err, &e) || e.Input != "soon" || e.Kind != KindTimestampTZ {
		t.Errorf("got %#v", err)
	}
	long := strings.Repeat("9", 1000)
	if _, err := ParseDate(long, SQL); err == nil || len(err.Error()) > 200 {
		t.Errorf("long input: %v", err)
	}
}

// TestDescribe pins the accepted forms each caller's errors list.
func TestDateTimeDescribe(t *testing.T) {
	for _, c := range []struct {
		f    Forms
		k    Kind
		want string
	}{
		{SQL, KindDate, "'yyyy-MM-dd'"},
		{SQL, KindTimestamp, "'yyyy-MM-dd', 'yyyy-MM-dd H[H]:mm[:ss[.fffffffff]]', 'yyyy-MM-ddTH[H]:mm[:ss[.fffffffff]]', " +
			"'yyyy-MM-ddTH[H]:mm:ss[.fffffffff](Z|±hh:mm)' (one or more spaces between date and time; ',' may stand for '.'; digits after the 9th are ignored)"},
		{Format, KindTime, "'HH:mm[:ss[.fffffffff]]'"},
		{Format, KindTimestamp, "'yyyy-MM-dd HH:mm[:ss[.fffffffff]][Z]', 'yyyy-MM-ddTHH:mm[:ss[.fffffffff]][Z]'"},
		{Postgres, KindTime, "'H[H]:mm:ss[.fffffffff]', '24:00:00' (',' may stand for '.'; digits after the 9th are ignored)"},
		{Postgres, KindTimestamp, "'yyyy-MM-dd H[H]:mm:ss[.fffffffff]' (one or more spaces between date and time; ',' may stand for '.'; digits after the 9th are ignored)"},
		{PostgresTZ, KindTimestampTZ, "'yyyy-MM-dd H[H]:mm:ss[.fffffffff](±hh:mm|±hh|±hh:mm:ss|±hhmm)' (one or more spaces between date and time; ',' may stand for '.'; digits after the 9th are ignored)"},
		{RFC3339, KindTimestampTZ, "'yyyy-MM-ddTH[H]:mm:ss[.fffffffff](Z|±hh:mm)' (',' may stand for '.'; digits after the 9th are ignored)"},
	} {
		if got := c.f.Describe(c.k); got != c.want {
			t.Errorf("%#x %s:\n got %s\nwant %s", uint32(c.f), c.k, got, c.want)
		}
	}
}

// TestNoAllocs: reading allocates nothing, from strings or bytes.
func TestDateTimeNoAllocs(t *testing.T) {
	b := []byte("2024-02-29 13:45:06.123456+05:30")
	s := string(b)
	n := testing.AllocsPerRun(100, func() {
		_, _ = ParseTimestampTZ(b, PostgresTZ)
		_, _ = ParseTimestampTZ(s, PostgresTZ)
		_, _ = ParseTimestamp(b[:26], Format)
		_, _ = ParseTimestamp(s[:26], SQL)
		_, _ = ParseDate(b[:10], Postgres)
		_, _ = ParseTime(b[11:26], Postgres)
	})
	if n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// compatCase checks in against the parsers it replaced: what the old
// parser of a caller accepted, the new one reads the same with the
// caller's forms, and what it refused the new one refuses, but for the
// changes listed in the package documentation (allowed returns why such a
// difference is one).
func compatCase(t *testing.T, in string) {
	b := []byte(in)
	trim := strings.TrimSpace(in)
	type pair struct {
		name    string
		old     func() (int64, bool)
		new     func() (int64, error)
		allowed func() string
	}
	none := func() string { return "" }
	pairs := []pair{
		{"format timestamp", func() (int64, bool) { return oldFormatTimestamp(b) }, func() (int64, error) { return ParseTimestamp(b, Format) }, none},
		{"format date", func() (int64, bool) { return oldFormatDate(b) }, func() (int64, error) { return ParseDate(b, Format) }, none},
		{"format time", func() (int64, bool) { return oldFormatTime(b) }, func() (int64, error) { return ParseTime(b, Format) }, none},
		{"sql timestamp", func() (int64, bool) { return oldSQLTimestamp(in) }, func() (int64, error) { return ParseTimestamp(trim, SQL) }, none},
		{"sql date", func() (int64, bool) { return oldSQLDate(in) }, func() (int64, error) { return ParseDate(trim, SQL) }, none},
		{"cdc date", func() (int64, bool) { return oldPGDate(b) }, func() (int64, error) { return ParseDate(b, Postgres) }, none},
		{"cdc time", func() (int64, bool) { return oldPGTime(b) }, func() (int64, error) { return ParseTime(b, Postgres) }, func() string {
			if strings.HasPrefix(in, "24:00:00") && len(in) > len("24:00:00") {
				return "24:00:00 with a zero fraction is now read, as PostgreSQL does"
			}
			return ""
		}},
		{"cdc timestamp", func() (int64, bool) { return oldPGTimestamp(b) }, func() (int64, error) { return ParseTimestamp(b, Postgres) }, none},
		{"cdc timestamptz", func() (int64, bool) { return oldPGTimestamptz(b) }, func() (int64, error) { return ParseTimestampTZ(b, PostgresTZ) }, func() string {
			i := strings.LastIndexAny(in, "+-")
			if i < 0 {
				return ""
			}
			if i < len("2006-01-02 15:04:05") {
				return "a one-digit hour before the offset is now read (the old parser looked for the offset from a fixed place)"
			}
			if !pgPrintedOffset(in[i:]) {
				return "only the offsets PostgreSQL prints, and ±hhmm, are read (the old parser took any digits, ±hhmm as hours)"
			}
			return ""
		}},
		{"cli time", func() (int64, bool) { return oldCLITime(in) }, func() (int64, error) { return ParseTimestampTZ(in, RFC3339) }, none},
	}
	for _, p := range pairs {
		ow, ok := p.old()
		nw, err := p.new()
		if ok == (err == nil) && (!ok || ow == nw) {
			continue
		}
		if why := p.allowed(); why != "" {
			continue
		}
		t.Errorf("%s %q: old %d, %v; new %d, %v", p.name, in, ow, ok, nw, err)
	}
}

// pgPrintedOffset tells the offsets PostgreSQL prints: ±hh, ±hh:mm,
// ±hh:mm:ss, within ±24:60:60.
func pgPrintedOffset(z string) bool {
	if len(z) != 3 && len(z) != 6 && len(z) != 9 {
		return false
	}
	for i := 1; i < len(z); i++ {
		if i%3 == 0 {
			if z[i] != ':' {
				return false
			}
		} else if !isDigit(z[i]) {
			return false
		}
	}
	for i, max := range []byte{24, 60, 60} {
		if 3*i+3 <= len(z) && (z[3*i+1]-'0')*10+z[3*i+2]-'0' > max {
			return false
		}
	}
	return true
}

// compatInputs combines dates, separators, times and zones, the good and
// the bad, into some tens of thousands of inputs.
func compatInputs() []string {
	dates := []string{"2024-02-29", "2023-02-29", "1969-12-31", "0000-01-01", "9999-12-31", "2020-13-01", "2020-00-10",
		"2020-1-01", "20200-01-01", "2020-01-32", "2020/01/01", "abcd-01-01", ""}
	seps := []string{"", " ", "T", "   ", "t", "x", "\t"}
	times := []string{"", "00:00", "7:05", "07:05", "23:59:59", "24:00:00", "24:00", "12:60:00", "12:00:60", "12:00:00.",
		"12:00:00.5", "12:00:00,5", "12:00:00.123456789", "12:00:00.1234567891", "12:00:00.000000001", "1:2:3", "12:00:0",
		"123:00:00", "12:00:00.5.5", "24:00:00.000", "12:00:00 "}
	zones := []string{"", "Z", "z", "+05:30", "-05:30", "+05", "-0530", "+05:30:15", "+24:00", "+25:00", "+05:60",
		"+05:61", "+5", "+05:3", " Z", "UTC", "ZZ", "+", "-00:53:28"}
	var out []string
	for _, d := range dates {
		for _, s := range seps {
			for _, tm := range times {
				for _, z := range zones {
					out = append(out, d+s+tm+z)
				}
			}
		}
	}
	for _, in := range []string{"2024-02-29", "2024-02-29 13:45:06", "2024-02-29T13:45:06Z", "13:45:06"} {
		out = append(out, " "+in, in+" ", "\t"+in+"\n", "\u00a0"+in)
	}
	return append(out, "infinity", "-infinity", "0044-03-15 BC", "0044-03-15 00:00:00+00 BC")
}

func TestDateTimeCompat(t *testing.T) {
	inputs := compatInputs()
	if testing.Short() {
		inputs = inputs[:len(inputs)/10]
	}
	for _, in := range inputs {
		compatCase(t, in)
	}
}

func FuzzDateTimeCompat(f *testing.F) {
	for _, in := range []string{"2024-02-29 13:45:06.123+05:30", "2024-02-29T13:45:06Z", "2024-02-29 13:45", "24:00:00",
		"2024-02-29", "7:05:06.1234567891", " 2024-02-29 "} {
		f.Add(in)
	}
	f.Fuzz(compatCase)
}

// BenchmarkParseTimestamp reads a timestamp as each caller does, with the
// parser it had before this package (old) and with this package (new).
func BenchmarkParseTimestamp(b *testing.B) {
	const (
		plain = "2024-02-29 13:45:06.123456"
		tz    = "2024-02-29 13:45:06.123456+05:30"
		rfc   = "2024-02-29T13:45:06.123456Z"
	)
	pb, tb := []byte(plain), []byte(tz)
	var sink int64
	for _, c := range []struct {
		name     string
		old, new func() (int64, bool)
	}{
		{"format", func() (int64, bool) { return oldFormatTimestamp(pb) },
			func() (int64, bool) { us, err := ParseTimestamp(pb, Format); return us, err == nil }},
		{"sql", func() (int64, bool) { return oldSQLTimestamp(plain) },
			func() (int64, bool) { us, err := ParseTimestamp(strings.TrimSpace(plain), SQL); return us, err == nil }},
		{"cdc", func() (int64, bool) { return oldPGTimestamp(pb) },
			func() (int64, bool) { us, err := ParseTimestamp(pb, Postgres); return us, err == nil }},
		{"cdc-tz", func() (int64, bool) { return oldPGTimestamptz(tb) },
			func() (int64, bool) { us, err := ParseTimestampTZ(tb, PostgresTZ); return us, err == nil }},
		{"cli", func() (int64, bool) { return oldCLITime(rfc) },
			func() (int64, bool) { us, err := ParseTimestampTZ(rfc, RFC3339); return us, err == nil }},
	} {
		for _, v := range []struct {
			name string
			fn   func() (int64, bool)
		}{{"old", c.old}, {"new", c.new}} {
			b.Run(fmt.Sprintf("%s/%s", c.name, v.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					us, ok := v.fn()
					if !ok {
						b.Fatal("refused")
					}
					sink += us
				}
			})
		}
	}
	_ = sink
}
