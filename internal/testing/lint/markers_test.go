package lint

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoConflictMarkers fails on a merge conflict's markers left in a
// tracked text file (a line that is exactly "=======", or that starts
// with "<<<<<<< " or ">>>>>>> "): a merge committed with them once put
// two versions of a row, and the markers, into docs/architecture.md.
func TestNoConflictMarkers(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v): nothing to check", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue // deleted in the work tree, or not a file
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, len(data)+1)
		for line := 1; sc.Scan(); line++ {
			if s := sc.Text(); s == "=======" || strings.HasPrefix(s, "<<<<<<< ") || strings.HasPrefix(s, ">>>>>>> ") {
				t.Errorf("%s:%d: a merge conflict's marker: %q", name, line, s)
			}
		}
	}
}
