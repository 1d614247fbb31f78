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

// Module returns the path of the built test module, udfs.wasm, in a
// directory of its own (Dir).
func Module(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(file), "..", "testdata", "udfs")
		once.dir, once.err = os.MkdirTemp("", "weir-wasmtest-")
		if once.err != nil {
			return
		}
		once.path = filepath.Join(once.dir, "udfs.wasm")
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			gobin = "go"
		}
		cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", once.path, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		once.out, once.err = cmd.CombinedOutput()
	})
	if once.err != nil {
		t.Fatalf("building the test module: %v\n%s", once.err, once.out)
	}
	return once.path
}
