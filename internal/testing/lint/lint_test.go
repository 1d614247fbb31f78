package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// listed is the part of `go list -json` that the rules need.
type listed struct {
	ImportPath   string
	Module       *struct{ Path string }
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
}

// goList lists every package of the module at root.
func goList(t *testing.T, root string) (module string, pkgs []Package) {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l listed
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if l.Module == nil {
			t.Fatalf("%s: not in a module", l.ImportPath)
		}
		module = l.Module.Path
		p := Package{Path: ".", Imports: l.Imports, TestImports: append(l.TestImports, l.XTestImports...), Deps: l.Deps}
		if l.ImportPath != module {
			p.Path = strings.TrimPrefix(l.ImportPath, module+"/")
		}
		pkgs = append(pkgs, p)
	}
	return module, pkgs
}

func readRules(t *testing.T) *Rules {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseRules(string(md))
	if err != nil {
		t.Fatalf("internal/README.md: %v", err)
	}
	return r
}

// TestDependencyRules checks every package of the module against the
// rules of internal/README.md, and the rules against the packages: a rule
// naming a package that does not exist is stale.
func TestDependencyRules(t *testing.T) {
	rules := readRules(t)
	module, pkgs := goList(t, filepath.Join("..", "..", ".."))
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: wrong directory?", len(pkgs))
	}
	for _, v := range rules.Check(module, pkgs) {
		t.Error(v)
	}
	paths := make([]string, len(pkgs))
	for i, p := range pkgs {
		paths[i] = p.Path
	}
	exists := func(pattern string) bool {
		return slices.ContainsFunc(paths, func(p string) bool { return match(pattern, p) })
	}
	// Both sides of the import rules name real packages; the other rules
	// name real packages on the left (their right side is outside paths).
	for _, m := range []map[string][]string{rules.May, rules.TestMay} {
		for pat, list := range m {
			for _, q := range list {
				if !exists(q) {
					t.Errorf("internal/README.md lets %s import %s, which is no package of the module", pat, q)
				}
			}
		}
	}
	for _, m := range []map[string][]string{rules.May, rules.TestMay, rules.Never, rules.NeverDeps} {
		for pat := range m {
			if !exists(pat) {
				t.Errorf("internal/README.md has a rule for %s, which is no package of the module", pat)
			}
		}
	}
	for _, from := range rules.OnlyFrom {
		for _, pat := range from {
			if !exists(pat) {
				t.Errorf("internal/README.md names %s, which is no package of the module", pat)
			}
		}
	}
}
