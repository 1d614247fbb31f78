// Package wasmtest builds the WebAssembly module of test functions
// (sql/wasmudf/testdata/udfs) with Go's own GOOS=wasip1 GOARCH=wasm, once
// per test process.
package wasmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var once struct {
	sync.Once
	dir, path string
	err       error
	out       []byte
}

// Module returns the path of the built test module: udfs.wasm in
// $TMPDIR/weir-wasmtest, shared by the test processes.
func Module(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(file), "..", "testdata", "udfs")
		// one directory for every test process (not one per run left
		// behind): each builds to a file of its own and renames it into
		// place, so processes building at once do not see a partial file
		once.dir = filepath.Join(os.TempDir(), "weir-wasmtest")
		if once.err = os.MkdirAll(once.dir, 0o755); once.err != nil {
			return
		}
		once.path = filepath.Join(once.dir, "udfs.wasm")
		tmp, err := os.CreateTemp(once.dir, ".udfs-*.wasm")
		if err != nil {
			once.err = err
			return
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			gobin = "go"
		}
		cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", tmp.Name(), ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if once.out, once.err = cmd.CombinedOutput(); once.err == nil {
			once.err = os.Rename(tmp.Name(), once.path)
		}
	})
	if once.err != nil {
		t.Fatalf("building the test module: %v\n%s", once.err, once.out)
	}
	return once.path
}
