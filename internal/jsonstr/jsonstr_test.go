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
