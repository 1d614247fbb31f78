package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/types"
)

// liveTable is a SELECT's result with its changelog applied, as the shell
// shows it on a terminal: rows in the order they first appeared, updated
// in place (Flink's SQL client's table mode).
type liveTable struct {
	mu      sync.Mutex
	schema  types.Schema
	count   map[string]int
	cells   map[string][]string
	order   []string
	changes int
}

func newLiveTable(schema types.Schema) *liveTable {
	return &liveTable{schema: schema, count: map[string]int{}, cells: map[string][]string{}}
}

// apply adds (+I, +U) or retracts (-U, -D) rows.
func (t *liveTable) apply(rows []types.Row) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range rows {
		cells := appendCells(make([]string, 0, len(t.schema)), r.Values, t.schema, "NULL")
		k := strings.Join(cells, "\x00")
		if _, seen := t.cells[k]; !seen {
			t.cells[k] = cells
			t.order = append(t.order, k)
		}
		if r.Kind.IsRetraction() {
			t.count[k]--
		} else {
			t.count[k]++
		}
		t.changes++
	}
	// forget rows that are gone, keeping the order of the others
	if len(t.order) > 2*len(t.count)+64 {
		kept := t.order[:0]
		for _, k := range t.order {
			if t.count[k] > 0 {
				kept = append(kept, k)
			} else {
				delete(t.count, k)
				delete(t.cells, k)
			}
		}
		t.order = kept
	}
}

// render writes the table: a header, up to max rows, and a summary line.
func (t *liveTable) render(w io.Writer, max int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	widths := make([]int, len(t.schema))
	for i, f := range t.schema {
		widths[i] = len(f.Name)
	}
	var rows [][]string
	for _, k := range t.order {
		for range t.count[k] {
			rows = append(rows, t.cells[k])
		}
	}
	shown := rows
	if len(shown) > max {
		shown = shown[len(shown)-max:]
	}
	for _, r := range shown {
		for i, c := range r {
			if i < len(widths) && len(c) > widths[i] {
				widths[i] = len(c)
			}
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteString(" | ")
			}
			fmt.Fprintf(&b, "%*s", widths[i], c)
		}
		b.WriteByte('\n')
	}
	line(t.schema.Names())
	for i, wd := range widths {
		if i > 0 {
			b.WriteString("-+-")
		}
		b.WriteString(strings.Repeat("-", wd))
	}
	b.WriteByte('\n')
	for _, r := range shown {
		line(r)
	}
	fmt.Fprintf(&b, "%d rows (%d shown), %d changes\n", len(rows), len(shown), t.changes)
	io.WriteString(w, b.String())
}

// appendCells appends the values of a row as the shell prints them, one
// per column of schema, NULL as null.
func appendCells(dst []string, vals []types.Value, schema types.Schema, null string) []string {
	for i, v := range vals[:min(len(vals), len(schema))] {
		if v.Null {
			dst = append(dst, null)
		} else {
			dst = append(dst, sql.FormatValue(v, schema[i].Type))
		}
	}
	return dst
}

// liveRows is how many rows of the live table fit the terminal w: its
// height less the header, the summary and the prompt (at least 10; 40
// when the height is unknown).
func liveRows(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 40
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Row == 0 {
		return 40
	}
	return max(int(ws.Row)-4, 10)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
