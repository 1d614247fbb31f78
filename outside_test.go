package weir_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's examples must compile and run in a module outside this
// one, depending on a checkout of weir the way the README says (a replace
// directive): adclicks, and clickfile, which reads a JSON-lines file with
// SQL-style timestamps with the Go API and with SQL.
func TestExampleBuildsOutsideTheModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a separate module")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		example string
		files   []string
		args    []string
		want    []string
	}{
		{"adclicks", []string{"main.go"}, nil, []string{"ad-1 12:00:00 12:01:00 2"}},
		{"clickfile", []string{"main.go", "clicks.sql", "clicks.jsonl"}, []string{"clicks.jsonl"}, []string{
			"Go API:\nad-1 12:00:00 12:01:00 2\nad-2 12:00:00 12:01:00 1\nad-1 12:01:00 12:02:00 2\nad-2 12:01:00 12:02:00 1\nad-2 12:02:00 12:03:00 1\nSQL:\n",
			"+I[ad-1, 2026-11-29 12:00:00.000, 2026-11-29 12:01:00.000, 2]",
			"+I[ad-2, 2026-11-29 12:01:00.000, 2026-11-29 12:02:00.000, 1]",
			"+I[ad-2, 2026-11-29 12:02:00.000, 2026-11-29 12:03:00.000, 1]",
		}},
	} {
		t.Run(c.example, func(t *testing.T) {
			dir := t.TempDir()
			gomod := "module example.com/user\n\ngo 1.26\n\nrequire github.com/weirstream/weir v0.0.0\n\nreplace github.com/weirstream/weir => " + root + "\n"
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, f := range c.files {
				src, err := os.ReadFile(filepath.Join("examples", c.example, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Under the race detector the example is built with it too, so
			// its dependencies are the race builds this test run already
			// compiled (from an empty build cache, a plain build would
			// compile the whole dependency tree again).
			run := []string{"run", "."}
			if raceEnabled {
				run = []string{"run", "-race", "."}
			}
			for _, args := range [][]string{{"mod", "tidy"}, append(run, c.args...)} {
				cmd := exec.Command("go", args...)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				if args[0] != "run" {
					continue
				}
				for _, w := range c.want {
					if !strings.Contains(string(out), w) {
						t.Fatalf("the output lacks %q:\n%s", w, out)
					}
				}
			}
		})
	}
}
