package planner

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/parser"
)

// fuzzConnectors are the connectors a fuzzed statement may plan with: none
// touches a file, a network or a database while a job is planned.
var dataID = regexp.MustCompile(`'data-id'\s*=\s*'([^']*)'`)

var fuzzConnectors = map[string]bool{"values": true, "datagen": true, "print": true, "blackhole": true, "nexmark": true}

// FuzzPlan checks the stages after the parser (issue 35): a text that
// parses must plan, its constant expressions folded, or fail with an error,
// never panic. The seed corpus is every statement of
// testdata/conformance, with its tables' rows (run by `go test`); the
// findings of longer runs are in testdata/fuzz/FuzzPlan.
func FuzzPlan(f *testing.F) {
	files, err := filepath.Glob("testdata/conformance/*")
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, block := range strings.Split(string(data), "\n\n") {
			head, rest, _ := strings.Cut(strings.TrimLeft(block, "\n"), "\n")
			for strings.HasPrefix(head, "#") {
				head, rest, _ = strings.Cut(rest, "\n")
			}
			input, _, _ := strings.Cut(rest, "----")
			switch {
			case strings.HasPrefix(head, "rows id="):
				var lines []string
				for _, l := range strings.Split(input, "\n") {
					if l = strings.TrimSpace(l); l != "" {
						lines = append(lines, l)
					}
				}
				id := strings.TrimPrefix(head, "rows id=")
				values.mu.Lock()
				values.data[filepath.Base(path)+"/"+id] = lines
				values.mu.Unlock()
			case strings.HasPrefix(head, "exec"):
				// the rows of this file: files reuse the names
				f.Add(dataID.ReplaceAllString(input, "'data-id' = '"+filepath.Base(path)+"/$1'"))
			}
		}
	}
	f.Add("SELECT CAST(127 AS TINYINT) + CAST(1 AS TINYINT), 1/0, MOD(5, 0), - -1, ABS(-2147483648);")
	f.Add("CREATE TABLE g (a INT, s STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen');\n" +
		"SELECT window_start, COUNT(*), SUM(a) FROM TABLE(TUMBLE(TABLE g, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;")
	f.Fuzz(func(t *testing.T, text string) {
		stmts, err := parser.Parse(text)
		if err != nil {
			return
		}
		lower := strings.ToLower(text)
		if strings.Contains(lower, "dir") || strings.Contains(lower, "path") || strings.Contains(lower, "file") {
			return // nothing that names a place to write
		}
		for _, st := range stmts {
			ct, ok := st.(*parser.CreateTable)
			if !ok {
				continue
			}
			for _, o := range ct.Options {
				if o.Key == "connector" && !fuzzConnectors[o.Value] {
					return
				}
			}
		}
		// Plan only: an error is fine, a panic is the finding.
		NewSession(Stdout(io.Discard)).Plan(text)
	})
}
