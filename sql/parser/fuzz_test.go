package parser

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse checks that no input panics the lexer or parser and that every
// error carries a position inside the text. The seed corpus is the
// statements of testdata/parse (run by `go test`).
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile("testdata/parse")
	if err != nil {
		f.Fatal(err)
	}
	for _, block := range strings.Split(string(data), "\n\n") {
		lines := strings.Split(block, "\n")
		var in []string
		for _, l := range lines {
			if l == "----" {
				break
			}
			if strings.HasPrefix(l, "parse") || strings.HasPrefix(l, "#") {
				continue
			}
			in = append(in, l)
		}
		f.Add(strings.Join(in, "\n"))
	}
	f.Add("SELECT (((((a")
	f.Add("CREATE TABLE t (a ROW<b ROW<c ARRAY<MAP<INT, STRING>>>>)")
	f.Fuzz(func(t *testing.T, text string) {
		_, err := Parse(text)
		if err == nil {
			return
		}
		pe, ok := err.(*Error)
		if !ok {
			t.Fatalf("error %v is %T, not *Error", err, err)
		}
		if pe.Pos.Line < 1 || pe.Pos.Line > strings.Count(text, "\n")+1 || pe.Pos.Col < 1 {
			t.Fatalf("error %v: position outside the text", err)
		}
	})
}
