package crashtest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
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

// builds are the programs Build made for the package's tests: one build
// per program, shared by every test (linking one takes seconds, longer on a
// busy machine, and the crash and group tests of a package start the same
// programs). dir is set by
// Main, which removes it when the tests end.
var builds struct {
	sync.Mutex
	dir  string
	bins map[string]*program
	wg   sync.WaitGroup
}

type program struct {
	once sync.Once
	done chan struct{} // closed when the build has ended
	dir  string
	bin  string
	err  error
}

// Main runs a package's tests (call it from TestMain: os.Exit(Main(m)))
// with one build of each program Build is asked for, removed at the end.
// When the whole package runs (no -run, no -short) it starts building
// prebuild's programs at once, in the background, so that the builds
// overlap the tests that come before the first one needing them (mostly
// waiting on brokers and commits, not on the CPU).
func Main(m *testing.M, prebuild ...string) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "crashtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	builds.Lock()
	builds.dir, builds.bins = dir, map[string]*program{}
	builds.Unlock()
	if run := flag.Lookup("test.run"); !testing.Short() && (run == nil || run.Value.String() == "") {
		for _, pkg := range prebuild {
			buildOf(pkg).start(pkg)
		}
	}
	defer builds.wg.Wait() // before the directory is removed
	return m.Run()
}

// buildOf is the (shared) program of pkg under Main.
func buildOf(pkg string) *program {
	builds.Lock()
	defer builds.Unlock()
	b := builds.bins[pkg]
	if b == nil {
		b = &program{done: make(chan struct{}), dir: filepath.Join(builds.dir, strconv.Itoa(len(builds.bins)))}
		builds.bins[pkg] = b
	}
	return b
}

// start starts the build, once.
func (b *program) start(pkg string) {
	b.once.Do(func() {
		builds.wg.Add(1)
		go func() {
			defer builds.wg.Done()
			defer close(b.done)
			if b.err = os.Mkdir(b.dir, 0o755); b.err == nil {
				b.bin = filepath.Join(b.dir, filepath.Base(pkg))
				b.err = GoBuild(b.bin, pkg)
			}
		}()
	})
}

// Build builds the main package pkg (an import path or a directory
// relative to the test's package): once for all the package's tests under
// Main, else into the test's temporary directory.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	builds.Lock()
	under := builds.dir != ""
	builds.Unlock()
	if !under {
		return buildTo(t, t.TempDir(), pkg)
	}
	b := buildOf(pkg)
	b.start(pkg)
	<-b.done
	if b.err != nil {
		t.Fatalf("build %s: %v", pkg, b.err)
	}
	return b.bin
}

func buildTo(t testing.TB, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	if err := GoBuild(bin, pkg); err != nil {
		t.Fatalf("build %s: %v", pkg, err)
	}
	return bin
}
