package crashtest

import (
	"fmt"
	"os/exec"
	"strings"
)

// GoBuild builds the main package pkg (an import path, or a directory
// relative to the working directory) into the file bin with `go build`,
// with -race when the calling binary has the race detector (Race).
//
// Building the program the way the test binary was built lets it reuse
// the packages the test build compiled: under the test command (go vet
// -race, go test -race) a plain build of a job's program compiled the
// whole module and its dependencies a second time, without -race, from an
// empty build cache (docs in scripts/test.sh). It also runs the killed
// processes themselves under the race detector.
func GoBuild(bin, pkg string) error {
	args := []string{"build", "-o", bin}
	if Race {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %s %s: %v\n%s", strings.Join(args, " "), pkg, err, out)
	}
	return nil
}
