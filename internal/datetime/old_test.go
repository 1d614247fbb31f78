package datetime

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// The four parsers this package replaced, as they were, kept as oracles:
// TestDateTimeCompat checks that every input one of them accepted reads
// the same with its caller's forms, and BenchmarkParseTimestamp compares
// speeds.

// oldFormatTimestamp is sql/format.ParseTimestamp at precision 6.
func oldFormatTimestamp(b []byte) (int64, bool) {
	if len(b) > 0 && b[len(b)-1] == 'Z' {
		b = b[:len(b)-1]
	}
	if len(b) < 16 || (b[10] != ' ' && b[10] != 'T') {
		return 0, false
	}
	days, err := oldFormatParseDate(b[:10])
	if err != nil {
		return 0, false
	}
	tod, err := oldFormatParseTime(b[11:])
	if err != nil {
		return 0, false
	}
	return days*microsPerDay + tod, true
}

// oldFormatDate is sql/format.ParseDate.
func oldFormatDate(b []byte) (int64, bool) {
	d, err := oldFormatParseDate(b)
	return d, err == nil
}

// oldFormatTime is sql/format.ParseTime.
func oldFormatTime(b []byte) (int64, bool) {
	t, err := oldFormatParseTime(b)
	return t, err == nil
}

var errOldSyntax = errors.New("syntax")

func oldDigits(b []byte) (int64, bool) {
	var n int64
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func oldFormatParseDate(b []byte) (int64, error) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return 0, errOldSyntax
	}
	y, ok1 := oldDigits(b[:4])
	m, ok2 := oldDigits(b[5:7])
	d, ok3 := oldDigits(b[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, errOldSyntax
	}
	return daysFromCivil(y, m, d), nil
}

func oldFormatParseTime(b []byte) (int64, error) {
	if len(b) < 5 || b[2] != ':' {
		return 0, errOldSyntax
	}
	h, ok1 := oldDigits(b[:2])
	mi, ok2 := oldDigits(b[3:5])
	if !ok1 || !ok2 || h > 23 || mi > 59 {
		return 0, errOldSyntax
	}
	us := (h*3600 + mi*60) * microsPerSecond
	b = b[5:]
	if len(b) == 0 {
		return us, nil
	}
	if len(b) < 3 || b[0] != ':' {
		return 0, errOldSyntax
	}
	s, ok := oldDigits(b[1:3])
	if !ok || s > 59 {
		return 0, errOldSyntax
	}
	us += s * microsPerSecond
	b = b[3:]
	if len(b) == 0 {
		return us, nil
	}
	if b[0] != '.' || len(b) < 2 || len(b) > 10 {
		return 0, errOldSyntax
	}
	frac := int64(0)
	scale := int64(100_000)
	for i, c := range b[1:] {
		if c < '0' || c > '9' {
			return 0, errOldSyntax
		}
		if i < 6 {
			frac += int64(c-'0') * scale
			scale /= 10
		}
	}
	return us + frac, nil
}

// oldSQLTimestamp is sql's parseTimestamp (CAST, TIMESTAMP literals).
func oldSQLTimestamp(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMicro(), true
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMicro(), true
	}
	return 0, false
}

// oldSQLDate is sql's parseDate (CAST, DATE literals).
func oldSQLDate(s string) (int64, bool) {
	t, err := time.Parse("2006-01-02", strings.TrimSpace(s))
	if err != nil {
		return 0, false
	}
	return t.Unix() / 86400, true
}

// oldPGDate, oldPGTime, oldPGTimestamp and oldPGTimestamptz are
// sql/connector/postgrescdc's parseDate, parseTime, parseTimestamp and
// parseTimestamptz.
func oldPGDate(b []byte) (int64, bool) {
	t, err := time.Parse("2006-01-02", string(b))
	if err != nil {
		return 0, false
	}
	return t.Unix() / 86400, true
}

func oldPGTime(b []byte) (int64, bool) {
	t, err := time.Parse("15:04:05.999999", string(b))
	if err != nil {
		if string(b) == "24:00:00" {
			return microsPerDay, true
		}
		return 0, false
	}
	return int64(t.Hour())*3600e6 + int64(t.Minute())*60e6 + int64(t.Second())*1e6 + int64(t.Nanosecond()/1000), true
}

const oldTSLayout = "2006-01-02 15:04:05.999999"

func oldPGTimestamp(b []byte) (int64, bool) {
	t, err := time.Parse(oldTSLayout, string(b))
	if err != nil {
		return 0, false
	}
	return t.UnixMicro(), true
}

func oldPGTimestamptz(b []byte) (int64, bool) {
	s := string(b)
	i := strings.LastIndexAny(s, "+-")
	if i < len("2006-01-02 15:04:05") {
		return 0, false
	}
	t, err := time.Parse(oldTSLayout, s[:i])
	if err != nil {
		return 0, false
	}
	var off int64
	mult := int64(3600)
	for _, part := range strings.Split(s[i+1:], ":") {
		n, err := strconv.ParseInt(part, 10, 64)
		if err != nil || mult == 0 {
			return 0, false
		}
		off += n * mult
		mult /= 60
	}
	if s[i] == '-' {
		off = -off
	}
	return t.UnixMicro() - off*1e6, true
}

// oldCLITime is the time part of internal/app/cli's parseTime and parseFrom,
// in microseconds (they took t.UnixMilli(), the same rounded down).
func oldCLITime(s string) (int64, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	return t.UnixMicro(), true
}
