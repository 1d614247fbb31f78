// Package datetime reads dates, times of day and timestamps from text for
// every part of weir that does: SQL (CAST and TRY_CAST of strings, DATE and
// TIMESTAMP literals), the formats (json, csv, debezium), PostgreSQL CDC
// (the text forms of logical decoding) and the command line (weir produce
// --timestamp, weir consume --from). One scanner reads them all; each caller
// passes the set of [Forms] it accepts, and the table below lists every form
// with the callers that accept it.
//
// Results are in weir's units: a DATE is days since 1970-01-01 ([ParseDate]),
// a TIME microseconds of the day ([ParseTime]), a TIMESTAMP microseconds since
// 1970-01-01 00:00:00 of its wall clock read as UTC ([ParseTimestamp]; Flink's
// TIMESTAMP), and a timestamp with a zone offset the instant, its wall clock
// minus the offset, in microseconds since the epoch ([ParseTimestampTZ], and
// [ParseTimestamp] where a caller accepts an optional zone). Fractional digits
// beyond microseconds are cut off. The parsers take a string or a []byte,
// read it in place and allocate nothing unless they fail.
//
// # Accepted forms
//
// Columns: the [Forms] bit that accepts the form; an example; the callers
// that accept it, as the kinds they read it for (D: DATE, T: TIME, TS:
// TIMESTAMP and TIMESTAMP_LTZ, TZ: a timestamp that must carry a zone;
// SQL has no CAST of strings to TIME yet); what Flink (for SQL and the
// formats) and PostgreSQL (for CDC) do.
//
//	form             Forms bit       example                 SQL  Format  CDC      CLI  Flink / PostgreSQL
//	yyyy-MM-dd       (all)           2024-02-29              D    D       D        -    both print it; Flink's CAST also reads 2024-2-9 and 2024
//	HH:mm:ss         (all)           13:45:06                TS   T TS    T TS TZ  TZ   both
//	.f to .f{9}      (all)           13:45:06.123456789      TS   T TS    T TS TZ  TZ   Flink reads up to 9 digits; PostgreSQL prints up to 6
//	HH:mm            NoSeconds       13:45                   TS   T TS    -        -    Flink's ISO-8601 formats; its CAST wants seconds
//	H:mm:ss          OneDigitHour    7:45:06                 TS   -       T TS TZ  TZ   Flink's CAST and PostgreSQL read it
//	.f{10,}          LongFraction    13:45:06.1234567891     TS   -       T TS TZ  TZ   Flink refuses it; PostgreSQL rounds to 6 digits
//	',' for '.'      CommaFraction   13:45:06,5              TS   -       T TS TZ  TZ   ISO 8601 allows it; Flink refuses it; PostgreSQL never prints it
//	24:00:00         EndOfDay        24:00:00                -    -       T        -    PostgreSQL's TIME has it; Flink's has not
//	date, midnight   DateOnly        2024-02-29              TS   -       -        -    Flink's CAST reads it
//	date ' ' time    SpaceSep        2024-02-29 13:45:06     TS   TS      TS TZ    -    Flink's CAST and SQL formats; PostgreSQL prints it
//	date '  ' time   SpaceRun        2024-02-29   13:45:06   TS   -       TS TZ    -    PostgreSQL reads it; Flink refuses it
//	date 'T' time    TSep            2024-02-29T13:45:06     TS   TS      -        TZ   Flink's ISO-8601 formats, not its CAST; RFC 3339
//	time Z           ZoneZ           13:45:06Z               TS*  TS      -        TZ   Flink's TIMESTAMP_LTZ formats end in Z; RFC 3339
//	time ±hh:mm      ZoneColon       13:45:06+05:30          TS*  -       TZ       TZ   PostgreSQL prints it off the hour; RFC 3339
//	time ±hh         ZoneHour        13:45:06+05             -    -       TZ       -    PostgreSQL prints it on the hour
//	time ±hh:mm:ss   ZoneSeconds     00:00:00-00:53:28       -    -       TZ       -    PostgreSQL prints it for local mean time
//	time ±hhmm       ZoneCompact     13:45:06+0530           -    -       TZ       -    PostgreSQL reads it, never prints it
//	spaces around    (the caller)    " 2024-02-29 "          all  all     -        -    SQL and the formats trim white space first; PostgreSQL never sends it
//
// TS* (ZoneRFC3339Only): SQL reads a zone only as RFC 3339 has it, after a
// 'T' and seconds, and gives the instant in UTC, its session zone (Flink's
// CAST reads no zone; weir's always read RFC 3339).
//
// Ranges: the year has four digits (0000 to 9999), the month is 01 to 12,
// the day exists in its month of the proleptic Gregorian calendar (29
// February only in leap years), the hour is 00 to 23, minutes and seconds
// are 00 to 59 (no leap second), and a zone offset is at most ±24:60:60
// (as Go's time.Parse, which the callers used before, allowed). PostgreSQL's
// 'infinity', '-infinity', BC dates ('0044-03-15 BC') and years after 9999
// are refused, with an error that says so.
//
// The callers' sets are [SQL], [Format], [Postgres] with [PostgresTZ], and
// [RFC3339] (the command line).
package datetime

import (
	"fmt"
	"strings"
)

// Text is what the parsers read: a string or a byte slice, in place.
type Text interface{ ~string | ~[]byte }

// Forms is a set of accepted forms beyond the ones every caller accepts
// (yyyy-MM-dd dates, HH:mm:ss times with 0 to 9 fractional digits): the
// rows of the table in the package documentation.
type Forms uint32

// The forms, one bit each.
const (
	DateOnly        Forms = 1 << iota // 'yyyy-MM-dd' as a timestamp: its midnight
	SpaceSep                          // ' ' between date and time
	SpaceRun                          // several spaces between date and time (with SpaceSep)
	TSep                              // 'T' between date and time (ISO 8601)
	NoSeconds                         // 'HH:mm', without seconds
	OneDigitHour                      // 'H:mm:ss', an hour of one digit
	LongFraction                      // more than 9 fractional digits; the rest are cut off
	CommaFraction                     // ',' before the fraction instead of '.'
	EndOfDay                          // the TIME '24:00:00': the end of the day
	ZoneZ                             // 'Z' after the time: UTC
	ZoneColon                         // '±hh:mm' after the time
	ZoneHour                          // '±hh' after the time
	ZoneSeconds                       // '±hh:mm:ss' after the time
	ZoneCompact                       // '±hhmm' after the time
	ZoneRFC3339Only                   // zones only after 'T' and seconds, as in RFC 3339

	zones = ZoneZ | ZoneColon | ZoneHour | ZoneSeconds | ZoneCompact
)

// The callers' sets of forms.
const (
	// SQL is what CAST and TRY_CAST of a string, and DATE and TIMESTAMP
	// literals, accept (after trimming white space).
	SQL = DateOnly | SpaceSep | SpaceRun | TSep | NoSeconds | OneDigitHour | LongFraction | CommaFraction |
		ZoneZ | ZoneColon | ZoneRFC3339Only
	// Format is what the json, csv and debezium formats accept (after
	// trimming white space): Flink's SQL and ISO-8601 forms.
	Format = SpaceSep | TSep | NoSeconds | ZoneZ
	// Postgres is what PostgreSQL prints for date, time and timestamp
	// (DateStyle ISO), as logical decoding sends them.
	Postgres = SpaceSep | SpaceRun | OneDigitHour | LongFraction | CommaFraction | EndOfDay
	// PostgresTZ is what PostgreSQL prints for timestamptz: a timestamp
	// with the session zone's offset.
	PostgresTZ = Postgres | ZoneHour | ZoneColon | ZoneSeconds | ZoneCompact
	// RFC3339 is what the command line accepts for a time: RFC 3339, as
	// Go's time.Parse(time.RFC3339Nano) reads it.
	RFC3339 = TSep | OneDigitHour | LongFraction | CommaFraction | ZoneZ | ZoneColon
)

// Kind is what a parser reads, for errors and [Forms.Describe].
type Kind uint8

// The kinds.
const (
	KindDate        Kind = iota // ParseDate
	KindTime                    // ParseTime
	KindTimestamp               // ParseTimestamp
	KindTimestampTZ             // ParseTimestampTZ
)

func (k Kind) String() string {
	switch k {
	case KindDate:
		return "date"
	case KindTime:
		return "time"
	case KindTimestamp:
		return "timestamp"
	}
	return "timestamp with time zone"
}

// Error is the error of a parser: the input, why it was refused, and the
// forms that would have been accepted.
type Error struct {
	Kind   Kind
	Input  string
	Reason string
	Forms  Forms
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %.64q: %s; accepted: %s", e.Kind, e.Input, e.Reason, e.Forms.Describe(e.Kind))
}

// ParseDate reads 'yyyy-MM-dd' as days since 1970-01-01. Dates have that
// one form; f only names the caller's forms in the error.
func ParseDate[T Text](s T, f Forms) (int64, error) {
	d, r := date(s)
	if r == okay && len(s) != 10 {
		r = badForm
	}
	if r != okay {
		return 0, fail(KindDate, s, f, r)
	}
	return d, nil
}

// ParseTime reads 'HH:mm:ss[.fffffffff]' and the other time forms of f as
// microseconds of the day.
func ParseTime[T Text](s T, f Forms) (int64, error) {
	us, i, _, r := clock(s, 0, f, f&EndOfDay != 0)
	if r == okay && i != len(s) {
		r = badForm
	}
	if r != okay {
		return 0, fail(KindTime, s, f, r)
	}
	return us, nil
}

// ParseTimestamp reads 'yyyy-MM-dd HH:mm:ss[.fffffffff]' and the other
// timestamp forms of f as microseconds since the epoch of its wall clock
// read as UTC; a zone, where f accepts one, gives the instant in UTC.
func ParseTimestamp[T Text](s T, f Forms) (int64, error) {
	us, r := timestamp(s, f, false)
	if r != okay {
		return 0, fail(KindTimestamp, s, f, r)
	}
	return us, nil
}

// ParseTimestampTZ reads a timestamp that must end in a zone of f
// ('2024-02-29 13:45:06+05:30') as the instant, in microseconds since the
// epoch.
func ParseTimestampTZ[T Text](s T, f Forms) (int64, error) {
	us, r := timestamp(s, f, true)
	if r != okay {
		return 0, fail(KindTimestampTZ, s, f, r)
	}
	return us, nil
}

const (
	microsPerSecond = 1_000_000
	microsPerDay    = 86_400 * microsPerSecond
)

// reason is why an input was refused; okay when it was not.
type reason uint8

const (
	okay reason = iota
	badForm
	badMonth
	badDay
	badHour
	badMinute
	badSecond
	badOffset
	noOffset
	badZone
)

var reasons = [...]string{
	badForm:   "not in an accepted form",
	badMonth:  "month out of range",
	badDay:    "day out of range for its month",
	badHour:   "hour out of range",
	badMinute: "minute out of range",
	badSecond: "second out of range",
	badOffset: "zone offset out of range",
	noOffset:  "no zone offset",
	badZone:   "a zone where none is accepted",
}

// fail builds the error of input s: the failure path, the only one that
// allocates.
func fail[T Text](k Kind, s T, f Forms, r reason) error {
	in := string(s)
	why := reasons[r]
	if r == badForm && unsupported(in) {
		why = "infinity, BC dates and years after 9999 are not supported"
	}
	return &Error{Kind: k, Input: in, Reason: why, Forms: f}
}

// unsupported tells PostgreSQL's forms that weir does not read: infinity,
// BC dates, years of five digits or more.
func unsupported(s string) bool {
	if s == "infinity" || s == "-infinity" || strings.HasSuffix(s, " BC") {
		return true
	}
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n > 4 && n < len(s) && s[n] == '-'
}

func isDigit(c byte) bool { return c-'0' <= 9 }

// d2 reads the two digits at s[i:i+2].
func d2[T Text](s T, i int) (int64, bool) {
	a, b := s[i]-'0', s[i+1]-'0'
	return int64(a)*10 + int64(b), a <= 9 && b <= 9
}

// date reads 'yyyy-MM-dd' at the start of s as days since 1970-01-01.
func date[T Text](s T) (int64, reason) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, badForm
	}
	c, ok1 := d2(s, 0)
	yy, ok2 := d2(s, 2)
	m, ok3 := d2(s, 5)
	d, ok4 := d2(s, 8)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0, badForm
	}
	y := c*100 + yy
	if m < 1 || m > 12 {
		return 0, badMonth
	}
	if d < 1 || d > daysIn(y, m) {
		return 0, badDay
	}
	return daysFromCivil(y, m, d), okay
}

// clock reads 'HH:mm[:ss[.fffffffff]]' at s[i:] as microseconds of the
// day, and returns the index after it and whether it had seconds. With
// endOfDay, '24:00:00' is the end of the day.
func clock[T Text](s T, i int, f Forms, endOfDay bool) (us int64, j int, secs bool, r reason) {
	n := len(s)
	var h int64
	switch {
	case i+1 < n && isDigit(s[i]) && isDigit(s[i+1]):
		h = int64(s[i]-'0')*10 + int64(s[i+1]-'0')
		i += 2
	case f&OneDigitHour != 0 && i < n && isDigit(s[i]):
		h = int64(s[i] - '0')
		i++
	default:
		return 0, i, false, badForm
	}
	if i+3 > n || s[i] != ':' {
		return 0, i, false, badForm
	}
	mi, ok := d2(s, i+1)
	if !ok {
		return 0, i, false, badForm
	}
	i += 3
	var sec, frac int64
	if i < n && s[i] == ':' {
		if i+3 > n {
			return 0, i, false, badForm
		}
		if sec, ok = d2(s, i+1); !ok {
			return 0, i, false, badForm
		}
		i += 3
		secs = true
		if i+1 < n && (s[i] == '.' || s[i] == ',' && f&CommaFraction != 0) && isDigit(s[i+1]) {
			i++
			start := i
			scale := int64(100_000)
			for ; i < n && isDigit(s[i]); i++ {
				frac += int64(s[i]-'0') * scale
				scale /= 10
			}
			if i-start > 9 && f&LongFraction == 0 {
				return 0, i, false, badForm
			}
		}
	} else if f&NoSeconds == 0 {
		return 0, i, false, badForm
	}
	switch {
	case h == 24 && endOfDay && mi == 0 && sec == 0 && frac == 0:
	case h > 23:
		return 0, i, false, badHour
	case mi > 59:
		return 0, i, false, badMinute
	case sec > 59:
		return 0, i, false, badSecond
	}
	return (h*3600+mi*60+sec)*microsPerSecond + frac, i, secs, okay
}

// timestamp reads a date, its time and, where f accepts one, a zone; with
// tz the zone is required.
func timestamp[T Text](s T, f Forms, tz bool) (int64, reason) {
	days, r := date(s)
	if r != okay {
		return 0, r
	}
	us := days * microsPerDay
	n := len(s)
	if n == 10 {
		if tz {
			return 0, noOffset
		}
		if f&DateOnly == 0 {
			return 0, badForm
		}
		return us, okay
	}
	i := 11
	switch s[10] {
	case ' ':
		if f&SpaceSep == 0 {
			return 0, badForm
		}
		for f&SpaceRun != 0 && i < n && s[i] == ' ' {
			i++
		}
	case 'T':
		if f&TSep == 0 {
			return 0, badForm
		}
	default:
		return 0, badForm
	}
	tod, i, secs, r := clock(s, i, f, false)
	if r != okay {
		return 0, r
	}
	us += tod
	if i == n {
		if tz {
			return 0, noOffset
		}
		return us, okay
	}
	if c := s[i]; c != 'Z' && c != '+' && c != '-' {
		return 0, badForm
	}
	if f&zones == 0 || f&ZoneRFC3339Only != 0 && (s[10] != 'T' || !secs) {
		return 0, badZone
	}
	off, r := zone(s, i, f)
	if r != okay {
		return 0, r
	}
	return us - off*microsPerSecond, okay
}

// zone reads the zone that is the rest of s from i: 'Z', '±hh', '±hh:mm',
// '±hh:mm:ss' or '±hhmm', as the offset in seconds east of UTC.
func zone[T Text](s T, i int, f Forms) (int64, reason) {
	n := len(s) - i
	c := s[i]
	if c == 'Z' {
		if n == 1 && f&ZoneZ != 0 {
			return 0, okay
		}
		return 0, badForm
	}
	if n < 3 {
		return 0, badForm
	}
	hh, ok := d2(s, i+1)
	var mm, ss int64
	ok2, ok3 := true, true
	var form Forms
	switch {
	case n == 3:
		form = ZoneHour
	case n == 5:
		form = ZoneCompact
		mm, ok2 = d2(s, i+3)
	case n == 6 && s[i+3] == ':':
		form = ZoneColon
		mm, ok2 = d2(s, i+4)
	case n == 9 && s[i+3] == ':' && s[i+6] == ':':
		form = ZoneSeconds
		mm, ok2 = d2(s, i+4)
		ss, ok3 = d2(s, i+7)
	default:
		return 0, badForm
	}
	if !ok || !ok2 || !ok3 || f&form == 0 {
		return 0, badForm
	}
	if hh > 24 || mm > 60 || ss > 60 {
		return 0, badOffset
	}
	off := (hh*60+mm)*60 + ss
	if c == '-' {
		off = -off
	}
	return off, okay
}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the days since 1970-01-01 of a proleptic Gregorian date
// (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// Describe lists the forms of f for kind k, for error messages.
func (f Forms) Describe(k Kind) string {
	hm := "HH:mm"
	if f&OneDigitHour != 0 {
		hm = "H[H]:mm"
	}
	withSecs := hm + ":ss[.fffffffff]"
	clock := withSecs
	if f&NoSeconds != 0 {
		clock = hm + "[:ss[.fffffffff]]"
	}
	var alts []string
	switch k {
	case KindDate:
		return "'yyyy-MM-dd'"
	case KindTime:
		alts = append(alts, "'"+clock+"'")
		if f&EndOfDay != 0 {
			alts = append(alts, "'24:00:00'")
		}
	default:
		if k == KindTimestamp && f&DateOnly != 0 {
			alts = append(alts, "'yyyy-MM-dd'")
		}
		var zs []string
		for _, z := range []struct {
			form Forms
			text string
		}{{ZoneZ, "Z"}, {ZoneColon, "±hh:mm"}, {ZoneHour, "±hh"}, {ZoneSeconds, "±hh:mm:ss"}, {ZoneCompact, "±hhmm"}} {
			if f&z.form != 0 {
				zs = append(zs, z.text)
			}
		}
		zone := strings.Join(zs, "|")
		for _, sep := range []struct {
			form Forms
			text string
		}{{SpaceSep, " "}, {TSep, "T"}} {
			if f&sep.form == 0 {
				continue
			}
			base := "'yyyy-MM-dd" + sep.text
			rfcOnly := f&ZoneRFC3339Only != 0
			switch {
			case zone == "" || rfcOnly && sep.form != TSep:
				if k == KindTimestamp {
					alts = append(alts, base+clock+"'")
				}
			case rfcOnly:
				if k == KindTimestamp {
					alts = append(alts, base+clock+"'")
				}
				alts = append(alts, base+withSecs+"("+zone+")'")
			case k == KindTimestamp:
				alts = append(alts, base+clock+"["+zone+"]'")
			default:
				alts = append(alts, base+clock+"("+zone+")'")
			}
		}
	}
	var notes []string
	if f&SpaceRun != 0 && f&SpaceSep != 0 && k >= KindTimestamp {
		notes = append(notes, "one or more spaces between date and time")
	}
	if f&CommaFraction != 0 {
		notes = append(notes, "',' may stand for '.'")
	}
	if f&LongFraction != 0 {
		notes = append(notes, "digits after the 9th are ignored")
	}
	out := strings.Join(alts, ", ")
	if len(notes) > 0 {
		out += " (" + strings.Join(notes, "; ") + ")"
	}
	return out
}
