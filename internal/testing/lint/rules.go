package lint

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
)

// Rules are the dependency rules of the module, parsed from the `rules`
// block of internal/README.md. Package paths are relative to the module:
// "." is the root package, "p/..." matches p and every package below it.
type Rules struct {
	// May lists, per package pattern, the module packages it may import.
	// A package that matches no pattern breaks the rules: each new
	// package must say where it stands.
	May map[string][]string
	// TestMay adds the module packages that a package's tests may import.
	TestMay map[string][]string
	// OnlyFrom lists, per outside module, the package patterns that may
	// import it (code or tests).
	OnlyFrom map[string][]string
	// Never lists, per package pattern, import paths it must not import
	// directly; NeverDeps, those it must not depend on at all.
	Never     map[string][]string
	NeverDeps map[string][]string
}

// Package is what the rules need to know of one package, as `go list`
// reports it; paths of the module's packages are relative to the module.
type Package struct {
	Path        string   // relative to the module; "." for the root
	Imports     []string // of the code
	TestImports []string // of the tests, in the package and in package _test
	Deps        []string // every package the code depends on, transitively
}

// ParseRules reads the rules from the first ```rules fenced block of a
// markdown text.
func ParseRules(markdown string) (*Rules, error) {
	r := &Rules{May: map[string][]string{}, TestMay: map[string][]string{}, OnlyFrom: map[string][]string{},
		Never: map[string][]string{}, NeverDeps: map[string][]string{}}
	sc := bufio.NewScanner(strings.NewReader(markdown))
	in, found, line := false, false, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if !in {
			if text == "```rules" {
				in, found = true, true
			}
			continue
		}
		if text == "```" {
			in = false
			continue
		}
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("rules line %d: %q: want `P -> Q...`, `P test-> Q...`, `M <- P...`, `P !> S...` or `P !>> M...`", line, sc.Text())
		}
		lhs, op, rhs := f[0], f[1], f[2:]
		var m map[string][]string
		switch op {
		case "->":
			m = r.May
		case "test->":
			m = r.TestMay
		case "<-":
			m = r.OnlyFrom
		case "!>":
			m = r.Never
		case "!>>":
			m = r.NeverDeps
		default:
			return nil, fmt.Errorf("rules line %d: unknown arrow %q", line, op)
		}
		if op != "->" && len(rhs) == 0 {
			return nil, fmt.Errorf("rules line %d: %q says nothing", line, sc.Text())
		}
		m[lhs] = append(m[lhs], rhs...)
	}
	if !found {
		return nil, fmt.Errorf("no ```rules block")
	}
	if in {
		return nil, fmt.Errorf("the ```rules block is not closed")
	}
	return r, nil
}

// match reports whether the module package path matches pattern.
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return pattern == path
}

// under reports whether the import path is the module (or package) m or
// below it.
func under(m, path string) bool { return path == m || strings.HasPrefix(path, m+"/") }

// allowed collects what the patterns matching path list in m.
func allowed(m map[string][]string, path string) (list []string, matched bool) {
	for pat, l := range m {
		if match(pat, path) {
			list, matched = append(list, l...), true
		}
	}
	return list, matched
}

// Check returns every break of the rules by pkgs, sorted. module is the
// module path: imports below it are the module's own packages.
func (r *Rules) Check(module string, pkgs []Package) []string {
	var out []string
	rel := func(imp string) (string, bool) {
		if imp == module {
			return ".", true
		}
		if p, ok := strings.CutPrefix(imp, module+"/"); ok {
			return p, true
		}
		return "", false
	}
	for _, p := range pkgs {
		may, ok := allowed(r.May, p.Path)
		if !ok {
			out = append(out, fmt.Sprintf("%s: no rule says what it may import (add `%s -> ...` to internal/README.md)", p.Path, p.Path))
			continue
		}
		testMay, _ := allowed(r.TestMay, p.Path)
		check := func(imports []string, test bool) {
			for _, imp := range imports {
				what := "imports"
				if test {
					what = "tests import"
				}
				if q, own := rel(imp); own {
					if q == p.Path || strings.HasSuffix(q, "_test") && strings.TrimSuffix(q, "_test") == p.Path {
						continue
					}
					if !slices.Contains(may, q) && !(test && slices.Contains(testMay, q)) {
						out = append(out, fmt.Sprintf("%s %s %s: not allowed by internal/README.md", p.Path, what, q))
					}
					continue
				}
				for m, from := range r.OnlyFrom {
					if under(m, imp) && !slices.ContainsFunc(from, func(pat string) bool { return match(pat, p.Path) }) {
						out = append(out, fmt.Sprintf("%s %s %s: only %s may", p.Path, what, imp, strings.Join(from, ", ")))
					}
				}
			}
		}
		check(p.Imports, false)
		check(p.TestImports, true)
		never, _ := allowed(r.Never, p.Path)
		for _, imp := range p.Imports {
			if slices.Contains(never, imp) {
				out = append(out, fmt.Sprintf("%s imports %s: forbidden by internal/README.md", p.Path, imp))
			}
		}
		neverDeps, _ := allowed(r.NeverDeps, p.Path)
		for _, m := range neverDeps {
			for _, d := range p.Deps {
				if under(m, d) {
					out = append(out, fmt.Sprintf("%s depends on %s (%s): forbidden by internal/README.md", p.Path, m, d))
					break
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
