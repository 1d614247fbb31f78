// Package jsontime gives Go programs the timestamps of weir's SQL: a
// Timestamp field of a struct decoded by encoding/json (as the file, log
// and Kafka sources decode records) reads the same text that a JSON table
// of `weir sql` reads, so one file serves a SQL job and a Go job.
//
// Flink's JSON format writes a TIMESTAMP as 'yyyy-MM-dd HH:mm:ss.SSS' (its
// option 'json.timestamp-format.standard' = 'SQL', the default) or as
// 'yyyy-MM-ddTHH:mm:ss.SSS' ('ISO-8601'); Go's time.Time reads neither
// of the first and wants RFC 3339. A Timestamp reads all three:
//
//	2024-02-29 13:45:06.123        SQL (Flink's default, and weir sql's output)
//	2024-02-29T13:45:06.123        ISO-8601
//	2024-02-29T13:45:06.123Z       ISO-8601 for TIMESTAMP_LTZ, RFC 3339 in UTC
//	2024-02-29T13:45:06+05:30      RFC 3339 with an offset (time.Time's own JSON)
//
// with 0 to 9 fractional digits (those beyond microseconds, weir's
// precision, are cut off), or none and no seconds ('13:45'), and white
// space around. A timestamp without a zone is its wall clock read
// as UTC (SQL's TIMESTAMP); with a zone it is that instant. It writes the
// SQL standard, in UTC, with milliseconds (more digits only where the
// time has them): what a JSON table reads with either standard's option.
//
// A value that is not a timestamp fails the decoding of its record with
// an error that quotes it and lists the accepted forms, so a source's
// bad-record policy (weir.OnBadRecord: Fail names file and line, Skip
// counts, DeadLetter keeps the raw record) handles it like any other
// malformed record.
package jsontime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/datetime"
)

// forms is what Timestamp reads: the SQL formats' forms, and RFC 3339's
// offsets.
const forms = datetime.Format | datetime.ZoneColon

// Timestamp is a time.Time that reads from and writes to JSON (and text)
// as weir's SQL formats do; see the package documentation. Its methods
// are time.Time's, but for the encodings.
type Timestamp struct{ time.Time }

// Parse reads a timestamp in any of the forms of the package
// documentation (white space around it is ignored). The time is in UTC.
func Parse(s string) (time.Time, error) {
	return parse([]byte(s))
}

func parse(b []byte) (time.Time, error) {
	us, err := datetime.ParseTimestamp(bytes.TrimSpace(b), forms)
	if err != nil {
		return time.Time{}, errors.New("jsontime: " + err.Error())
	}
	return time.UnixMicro(us).UTC(), nil
}

// UnmarshalJSON reads a JSON string in one of the accepted forms; null
// leaves the Timestamp as it is (as for time.Time). Anything else, a
// number included, is an error: Flink's JSON format reads no numbers as
// timestamps either.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("jsontime: timestamp %.64s is not a JSON string", b)
	}
	s := b[1 : len(b)-1]
	if bytes.IndexByte(s, '\\') >= 0 {
		// An escaped string (no timestamp needs one): unquote it first.
		var u string
		if err := json.Unmarshal(b, &u); err != nil {
			return err
		}
		s = []byte(u)
	}
	return t.UnmarshalText(s)
}

// UnmarshalText reads a timestamp in one of the accepted forms.
func (t *Timestamp) UnmarshalText(b []byte) error {
	v, err := parse(b)
	if err != nil {
		return err
	}
	t.Time = v
	return nil
}

// MarshalJSON writes the timestamp as a JSON string in the SQL standard.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 32)
	b = append(b, '"')
	b = t.AppendSQL(b)
	return append(b, '"'), nil
}

// MarshalText writes the timestamp in the SQL standard.
func (t Timestamp) MarshalText() ([]byte, error) {
	return t.AppendSQL(make([]byte, 0, 30)), nil
}

// String is the timestamp in the SQL standard.
func (t Timestamp) String() string { return string(t.AppendSQL(nil)) }

// AppendSQL appends the timestamp in UTC in the SQL standard,
// 'yyyy-MM-dd HH:mm:ss.SSS', with 6 or 9 fractional digits where the
// milliseconds do not hold it all.
func (t Timestamp) AppendSQL(b []byte) []byte {
	u := t.UTC()
	layout := "2006-01-02 15:04:05.000"
	switch ns := u.Nanosecond(); {
	case ns%1_000 != 0:
		layout = "2006-01-02 15:04:05.000000000"
	case ns%1_000_000 != 0:
		layout = "2006-01-02 15:04:05.000000"
	}
	return u.AppendFormat(b, layout)
}
