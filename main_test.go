package weir_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir"
)

func TestMainArgsApplyOperationalFlags(t *testing.T) {
	dir := t.TempDir()
	sink := newMemSink()
	job := windowJob(5000, 0, 1, "", sink)
	var log bytes.Buffer
	err := weir.MainArgs(context.Background(), job, []string{"--parallelism", "3", "--checkpoint-dir", dir, "--checkpoint-interval", "10ms"}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "chk-*")); len(m) == 0 {
		t.Fatalf("--checkpoint-dir: no checkpoint written; log:\n%s", log.String())
	}
	if !bytes.Contains(log.Bytes(), []byte("parallelism=3")) {
		t.Fatalf("--parallelism not applied; log:\n%s", log.String())
	}
	if err := weir.MainArgs(context.Background(), windowJob(10, 0, 1, "", newMemSink()), []string{"--log-level", "loud"}, os.Stderr); err == nil {
		t.Fatal("a bad flag value must fail")
	}
}
