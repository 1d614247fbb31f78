package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/types"
)

// The shell's result modes, Flink's 'sql-client.execution.result-mode':
// table (the default: a table updated in place on a terminal), changelog
// (the changes as they come, "+I[1, a]"), tableau (the changes as rows of
// a bordered table with an op column, printed as they come).
const (
	resultModeKey   = "sql-client.execution.result-mode"
	modeTable       = "table"
	modeChangelog   = "changelog"
	modeTableau     = "tableau"
	tableauMaxWidth = 30       // Flink's sql-client.display.max-column-width
	tableauNull     = "<NULL>" // how Flink's tableau shows NULL
)

// resultMode is the session's result mode.
func resultMode(s *sql.Session) (string, error) {
	v, ok := s.Setting(resultModeKey)
	if !ok {
		return modeTable, nil
	}
	switch m := strings.ToLower(strings.TrimSpace(v)); m {
	case modeTable, modeChangelog, modeTableau:
		return m, nil
	}
	return "", fmt.Errorf("'%s' = '%s': want 'table', 'changelog' or 'tableau'", resultModeKey, v)
}

// tableau prints a query's changes as Flink's sql-client does in its
// tableau mode for a streaming query: a bordered table whose column widths
// follow the column types (the rows come over time), values right-aligned
// and cut to 30 characters with "...", then "Received a total of N rows"
// at the end, or "Query terminated, received a total of N rows" when the
// query was cancelled.
type tableau struct {
	mu     sync.Mutex
	w      io.Writer
	schema types.Schema
	widths []int
	border string
	n      int64
	cells  []string
	b      strings.Builder
}

func newTableau(w io.Writer, schema types.Schema) *tableau {
	t := &tableau{w: w, schema: schema, widths: []int{len("op")}}
	for _, f := range schema {
		t.widths = append(t.widths, max(len(f.Name), typeWidth(f.Type), len(tableauNull)))
	}
	var b strings.Builder
	b.WriteByte('+')
	for _, wd := range t.widths {
		b.WriteString(strings.Repeat("-", wd+2))
		b.WriteByte('+')
	}
	t.border = b.String()
	return t
}

// typeWidth is the width a column of type ty needs for any value, where
// Flink's tableau knows one; other types get the maximum column width.
func typeWidth(ty types.Type) int {
	switch ty.Kind {
	case types.TinyInt:
		return 4
	case types.SmallInt:
		return 6
	case types.Int:
		return 11
	case types.BigInt:
		return 20
	case types.Decimal:
		return ty.Precision + 2
	case types.Boolean:
		return 5
	case types.Date:
		return 10
	case types.Time:
		if ty.Precision == 0 {
			return 8
		}
		return ty.Precision + 9
	case types.Timestamp, types.TimestampLTZ:
		switch p := ty.Precision; {
		case p == 0:
			return 19
		case p <= 3:
			return 23
		case p <= 6:
			return 26
		default:
			return 29
		}
	}
	return tableauMaxWidth
}

// header prints the border, the column names and the border.
func (t *tableau) header() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Reset()
	t.b.WriteString(t.border)
	t.b.WriteByte('\n')
	t.line(append([]string{"op"}, t.schema.Names()...))
	t.b.WriteString(t.border)
	t.b.WriteByte('\n')
	io.WriteString(t.w, t.b.String())
}

// write prints rows, the changes of the result.
func (t *tableau) write(rows []types.Row) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Reset()
	for _, r := range rows {
		t.cells = appendCells(append(t.cells[:0], r.Kind.String()), r.Values, t.schema, tableauNull)
		t.line(t.cells)
		t.n++
	}
	_, err := io.WriteString(t.w, t.b.String())
	return err
}

// line adds one row of cells, right-aligned, cut where too long.
func (t *tableau) line(cells []string) {
	t.b.WriteByte('|')
	for i, c := range cells {
		wd := t.widths[i]
		t.b.WriteByte(' ')
		if n := utf8.RuneCountInString(c); n <= wd {
			t.b.WriteString(strings.Repeat(" ", wd-n))
			t.b.WriteString(c)
		} else {
			k, cut := 0, 0
			for j := range c {
				if k == wd-3 {
					cut = j
					break
				}
				k++
			}
			t.b.WriteString(c[:cut])
			t.b.WriteString("...")
		}
		t.b.WriteString(" |")
	}
	t.b.WriteByte('\n')
}

// footer prints the last border and the count of rows received.
func (t *tableau) footer(cancelled bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	term := "rows"
	if t.n <= 1 {
		term = "row"
	}
	if cancelled {
		fmt.Fprintf(t.w, "%s\nQuery terminated, received a total of %d %s\n", t.border, t.n, term)
		return
	}
	fmt.Fprintf(t.w, "%s\nReceived a total of %d %s\n", t.border, t.n, term)
}
