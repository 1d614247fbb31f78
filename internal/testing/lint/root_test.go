package lint

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The root package is the user's API: public names, their documentation,
// and adapters of one statement over internal/engine. These ceilings keep
// the engine from growing back into it (issue 36).
const (
	rootMaxFiles = 25
	rootMaxLines = 6000
)

// TestRootIsTheAPI checks the root package's size, and that it declares
// nothing unexported and no function longer than one statement: its code
// is aliases and wrappers, the engine lives in internal/.
func TestRootIsTheAPI(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	names, err := filepath.Glob(filepath.Join(root, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files, lines := 0, 0
	fset := token.NewFileSet()
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
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range rootViolations(fset, f) {
			t.Error(v)
		}
	}
	if files > rootMaxFiles {
		t.Errorf("the root package has %d non-test files, at most %d: engine code belongs in internal/", files, rootMaxFiles)
	}
	if lines > rootMaxLines {
		t.Errorf("the root package has %d non-test lines, at most %d: engine code belongs in internal/", lines, rootMaxLines)
	}
	if files == 0 {
		t.Fatal("no root package files found: wrong directory?")
	}
}

// rootViolations reports the declarations of f that are engine code rather
// than API: unexported names and functions of more than one statement.
func rootViolations(fset *token.FileSet, f *ast.File) []string {
	var out []string
	bad := func(pos token.Pos, format string, args ...any) {
		out = append(out, fset.Position(pos).String()+": "+fmt.Sprintf(format, args...))
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil {
				bad(d.Pos(), "method %s: the root declares no methods (declare it in internal/ and alias the type)", d.Name.Name)
			} else if !d.Name.IsExported() && d.Name.Name != "init" {
				bad(d.Pos(), "unexported func %s: engine code belongs in internal/", d.Name.Name)
			}
			if d.Body != nil && len(d.Body.List) > 1 {
				bad(d.Pos(), "func %s has %d statements: a root function only forwards to internal/", d.Name.Name, len(d.Body.List))
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						bad(s.Pos(), "unexported type %s: engine code belongs in internal/", s.Name.Name)
					}
					if !s.Assign.IsValid() {
						bad(s.Pos(), "type %s is defined here: alias a type of internal/ instead", s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if !n.IsExported() && n.Name != "_" {
							bad(n.Pos(), "unexported %s %s: engine code belongs in internal/", d.Tok, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}
