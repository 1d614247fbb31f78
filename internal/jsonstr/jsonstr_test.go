package jsonstr

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// Read agrees with encoding/json on every string it accepts, and refuses
// what encoding/json refuses.
func TestReadMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`"plain"`, `""`, `"a\"b\\c\/d"`, `"\b\f\n\r\t"`, `"\u00e9\u20AC"`, `"\ud83d\ude00 smile"`,
		`"lone \ud800 high"`, `"lone \udc00 low"`, `"\ud800\u0041"`, `"héllo"`,
		`"unterminated`, `"bad \x escape"`, `"bad \u12G4"`, "\"ctl \x01\"", `"\ud800\uZZZZ"`, `"\`,
	} {
		got, next, err := Read([]byte(in), 1, nil)
		var want string
		jerr := json.Unmarshal([]byte(in), &want)
		switch {
		case jerr != nil && err == nil:
			t.Errorf("%q: accepted as %q, encoding/json refuses: %v", in, got, jerr)
		case jerr == nil && err != nil:
			t.Errorf("%q: %v, encoding/json reads %q", in, err, want)
		case jerr == nil && (string(got) != want || next != len(in)):
			t.Errorf("%q: %q next %d, want %q next %d", in, got, next, want, len(in))
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`"a\u00e9\ud83d\ude00"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' || !utf8.Valid(b) {
			return // invalid UTF-8 is passed through here; encoding/json replaces it
		}
		got, next, err := Read(b, 1, nil)
		var want string
		if json.Unmarshal(b[:next], &want) == nil && err == nil && string(got) != want {
			t.Fatalf("%q: %q, encoding/json %q", b, got, want)
		}
	})
}

// Append writes valid JSON in valid UTF-8 for any input, and what it writes
// reads back as encoding/json's reading of encoding/json's writing (which
// also replaces each invalid byte with U+FFFD); AppendStrict refuses at the
// first invalid byte.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"plain", "tab\there \"q\" \\", "ctl \x01\x1f", "héllo €", "bad \xff byte", "cut \xe2\x82", "\xc3", "\xed\xa0\x80 surrogate", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Append(nil, s)
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("%q: wrote %q, not valid UTF-8 JSON", s, out)
		}
		var got, want string
		ref, _ := json.Marshal(s)
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%q: reads back as %q, encoding/json's as %q", s, got, want)
		}
		strict, bad := AppendStrict(nil, []byte(s), true)
		switch {
		case utf8.ValidString(s) && (bad != -1 || string(strict) != string(out)):
			t.Fatalf("%q: strict wrote %q, %d; want %q, -1", s, strict, bad, out)
		case !utf8.ValidString(s) && (bad < 0 || utf8.ValidString(s[bad:]) || !utf8.ValidString(s[:bad])):
			t.Fatalf("%q: strict stopped at %d, not the first invalid byte", s, bad)
		}
	})
}
