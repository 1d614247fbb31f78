package lint

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sqlMaxLines is the ceiling of package sql's non-test lines: it is the
// facade (Run, Session, options) over sql/planner and sql/expr, and the
// planner does not grow back into it (issue 36).
const sqlMaxLines = 4000

// TestSQLIsAFacade checks the size of package sql's top level.
func TestSQLIsAFacade(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("..", "..", "..", "sql", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files, lines := 0, 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files++
		lines += bytes.Count(src, []byte("\n"))
	}
	if files == 0 {
		t.Fatal("no sql package files found: wrong directory?")
	}
	if lines > sqlMaxLines {
		t.Errorf("package sql has %d non-test lines, at most %d: planning belongs in sql/planner, expressions in sql/expr", lines, sqlMaxLines)
	}
}
