package weir_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's example must compile and run in a module outside this one,
// importing weir the way a user does.
func TestExampleBuildsOutsideTheModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a separate module")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("examples/adclicks/main.go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/user\n\ngo 1.26\n\nrequire github.com/weirstream/weir v0.0.0\n\nreplace github.com/weirstream/weir => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	// Under the race detector the example is built with it too, so its
	// dependencies are the race builds this test run already compiled
	// (from an empty build cache, a plain build would compile the whole
	// dependency tree again).
	run := []string{"run", "."}
	if raceEnabled {
		run = []string{"run", "-race", "."}
	}
	for _, args := range [][]string{{"mod", "tidy"}, run} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "run" && !strings.Contains(string(out), "ad-1 12:00:00 12:01:00 2") {
			t.Fatalf("unexpected output:\n%s", out)
		}
	}
}
