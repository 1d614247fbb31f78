package planner

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// functionDocTable is the table that the examples of docs/sql-functions.md
// may read, as that page declares it.
const functionDocTable = "CREATE TABLE ev (k INT, v INT, s STRING, a ARRAY<INT>, m MAP<STRING, INT>, ts TIMESTAMP(3),\n" +
	"  pt AS PROCTIME(), WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'data-id' = 'functions-doc');\n"

// functionDocRow is one row of a function table of docs/sql-functions.md.
type functionDocRow struct {
	line             int
	function, status string
	example          string
}

// TestFunctionTableDoc keeps docs/sql-functions.md true: every row's
// example plans when the row says weir has the function (yes, partly) and
// fails to plan when it says weir has not (no), and the summary line counts
// the rows.
func TestFunctionTableDoc(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "docs", "sql-functions.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := functionDocRows(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 100 {
		t.Fatalf("found only %d function rows in docs/sql-functions.md", len(rows))
	}
	values.mu.Lock()
	values.data["functions-doc"] = nil // an empty input for ev
	values.mu.Unlock()

	counts := map[string]int{}
	for _, r := range rows {
		at := fmt.Sprintf("docs/sql-functions.md:%d: %s", r.line, r.function)
		counts[r.status]++
		if r.example == "" {
			t.Errorf("%s: no example", at)
			continue
		}
		err := planFunctionExample(r.example)
		switch r.status {
		case "yes", "partly":
			if err != nil {
				t.Errorf("%s is marked %s, but `%s` does not plan: %v", at, r.status, r.example, err)
			}
		case "no":
			if err == nil {
				t.Errorf("%s is marked no, but `%s` plans", at, r.example)
			}
		default:
			t.Errorf("%s: status %q is not yes, partly or no", at, r.status)
		}
	}

	m := regexp.MustCompile(`\*\*Summary: (\d+) yes, (\d+) partly, (\d+) no\.\*\*`).FindStringSubmatch(string(text))
	want := fmt.Sprintf("**Summary: %d yes, %d partly, %d no.**", counts["yes"], counts["partly"], counts["no"])
	if m == nil || m[0] != want {
		t.Errorf("docs/sql-functions.md: the summary line should read %s", want)
	}
}

// planFunctionExample plans an example: a whole SELECT, or an expression
// selected without FROM, after the declaration of ev.
func planFunctionExample(example string) error {
	q := example
	if !strings.HasPrefix(strings.ToUpper(q), "SELECT ") {
		q = "SELECT " + q
	}
	_, err := NewSession(Stdout(io.Discard)).Plan(functionDocTable + q)
	return err
}

// functionDocRows reads the rows of the page's tables whose header is
// | Function | weir | Note | Example |.
func functionDocRows(text string) ([]functionDocRow, error) {
	var rows []functionDocRow
	inTable := false
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := markdownCells(line)
		switch {
		case len(cells) == 4 && cells[0] == "Function" && cells[1] == "weir":
			inTable = true
			continue
		case !inTable || strings.HasPrefix(line, "|---"):
			continue
		case len(cells) != 4:
			return nil, fmt.Errorf("docs/sql-functions.md:%d: want 4 cells, got %d", i+1, len(cells))
		}
		rows = append(rows, functionDocRow{line: i + 1, function: cells[0], status: cells[1], example: strings.Trim(cells[3], "`")})
	}
	return rows, nil
}

// markdownCells splits a table row at its unescaped pipes; "\|" is a pipe
// inside a cell.
func markdownCells(line string) []string {
	var cells []string
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(line[i])
		}
	}
	// the text before the first pipe and after the last one is no cell
	if len(cells) > 0 {
		cells = cells[1:]
	}
	return cells
}
