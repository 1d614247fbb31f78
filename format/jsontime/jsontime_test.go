package jsontime_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/format/jsontime"
)

func TestReadsTheFormsOfSQL(t *testing.T) {
	want := time.Date(2024, 2, 29, 13, 45, 6, 123_000_000, time.UTC)
	for _, in := range []string{
		`"2024-02-29 13:45:06.123"`,
		`"2024-02-29T13:45:06.123"`,
		`"2024-02-29T13:45:06.123Z"`,
		`"2024-02-29T19:15:06.123+05:30"`,
		`" 2024-02-29 13:45:06.123000 "`,
		`"2024-02-29 13:45:06\u002e123"`,
	} {
		var ts jsontime.Timestamp
		if err := json.Unmarshal([]byte(in), &ts); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if !ts.Equal(want) || ts.Location() != time.UTC {
			t.Errorf("%s: got %v, want %v", in, ts.Time, want)
		}
	}
	// Without seconds, and with digits beyond microseconds (cut off).
	for in, want := range map[string]time.Time{
		`"2024-02-29 13:45"`:              time.Date(2024, 2, 29, 13, 45, 0, 0, time.UTC),
		`"2024-02-29 13:45:06.123456789"`: time.Date(2024, 2, 29, 13, 45, 6, 123_456_000, time.UTC),
		`"1969-12-31 23:59:59.999"`:       time.Date(1969, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		`"2024-02-29T13:45:06.5-01:00"`:   time.Date(2024, 2, 29, 14, 45, 6, 500_000_000, time.UTC),
	} {
		var ts jsontime.Timestamp
		if err := json.Unmarshal([]byte(in), &ts); err != nil {
			t.Errorf("%s: %v", in, err)
		} else if !ts.Equal(want) {
			t.Errorf("%s: got %v, want %v", in, ts.Time, want)
		}
	}
}

// time.Time's own JSON, in any zone, reads back as the same instant.
func TestReadsTimeTimesJSON(t *testing.T) {
	zone := time.FixedZone("x", -(3*3600 + 30*60))
	for _, v := range []time.Time{
		time.Date(2024, 2, 29, 13, 45, 6, 123_456_000, time.UTC),
		time.Date(2024, 2, 29, 13, 45, 6, 0, zone),
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var ts jsontime.Timestamp
		if err := json.Unmarshal(b, &ts); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !ts.Equal(v) {
			t.Errorf("%s: got %v, want %v", b, ts.Time, v)
		}
	}
}

func TestWritesTheSQLStandard(t *testing.T) {
	zone := time.FixedZone("x", 2*3600)
	for _, c := range []struct {
		v    time.Time
		want string
	}{
		{time.Date(2024, 2, 29, 13, 45, 6, 0, time.UTC), `"2024-02-29 13:45:06.000"`},
		{time.Date(2024, 2, 29, 13, 45, 6, 120_000_000, time.UTC), `"2024-02-29 13:45:06.120"`},
		{time.Date(2024, 2, 29, 13, 45, 6, 123_400_000, time.UTC), `"2024-02-29 13:45:06.123400"`},
		{time.Date(2024, 2, 29, 13, 45, 6, 1, time.UTC), `"2024-02-29 13:45:06.000000001"`},
		{time.Date(2024, 2, 29, 15, 45, 6, 0, zone), `"2024-02-29 13:45:06.000"`},
	} {
		b, err := json.Marshal(jsontime.Timestamp{Time: c.v})
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%v: wrote %s, want %s", c.v, b, c.want)
		}
		if s := (jsontime.Timestamp{Time: c.v}).String(); s != strings.Trim(c.want, `"`) {
			t.Errorf("String: %s", s)
		}
	}
	// As a field, and back.
	type click struct {
		Ad string             `json:"ad"`
		TS jsontime.Timestamp `json:"ts"`
	}
	in := click{"ad-1", jsontime.Timestamp{Time: time.Date(2024, 1, 1, 12, 0, 1, 0, time.UTC)}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"ad":"ad-1","ts":"2024-01-01 12:00:01.000"}` {
		t.Errorf("wrote %s", b)
	}
	var out click
	if err := json.Unmarshal(b, &out); err != nil || !out.TS.Equal(in.TS.Time) {
		t.Errorf("read back %+v, %v", out, err)
	}
}

func TestRefusesWhatIsNotATimestamp(t *testing.T) {
	for in, want := range map[string]string{
		`"2024-13-01 00:00:00"`:    `jsontime: timestamp "2024-13-01 00:00:00": month out of range; accepted: `,
		`"2023-02-29 00:00:00"`:    `day out of range for its month`,
		`"yesterday"`:              `timestamp "yesterday": not in an accepted form; accepted: 'yyyy-MM-dd HH:mm`,
		`"2024-02-29"`:             `not in an accepted form`,
		`1709214306123`:            `jsontime: timestamp 1709214306123 is not a JSON string`,
		`true`:                     `is not a JSON string`,
		`"2024-02-29 13:45:06+05"`: `not in an accepted form`,
	} {
		var ts jsontime.Timestamp
		err := json.Unmarshal([]byte(in), &ts)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", in, err, want)
		}
	}
	// null leaves the value, as for time.Time.
	ts := jsontime.Timestamp{Time: time.Unix(5, 0)}
	if err := json.Unmarshal([]byte(`null`), &ts); err != nil || !ts.Equal(time.Unix(5, 0)) {
		t.Errorf("null: %v, %v", ts, err)
	}
	// Parse and UnmarshalText say the same.
	if _, err := jsontime.Parse("2024-02-30 00:00:00"); err == nil || !strings.Contains(err.Error(), "day out of range") {
		t.Errorf("Parse: %v", err)
	}
	var tt jsontime.Timestamp
	if err := tt.UnmarshalText([]byte("nope")); err == nil {
		t.Error("UnmarshalText took nope")
	}
	if err := ts.UnmarshalJSON([]byte(`"\x"`)); err == nil {
		t.Error("a bad escape was taken")
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	in := []byte(`"2024-02-29 13:45:06.123"`)
	var ts jsontime.Timestamp
	b.ReportAllocs()
	for b.Loop() {
		if err := ts.UnmarshalJSON(in); err != nil {
			b.Fatal(err)
		}
	}
}
