package weir_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/control"
)

// The control endpoint of a running job: it answers only with the token
// from control.token, refuses a foreign Origin, confines savepoint paths
// to the savepoint directory and deletes nothing it did not create; a
// savepoint asked for properly is written; both files go when the job
// ends.
func TestControlEndpointSecurity(t *testing.T) {
	ck := t.TempDir()
	sink := newMemSink()
	job := windowJob(-1, 20_000, 1, ck, sink, weir.ControlAddr("127.0.0.1:0"))
	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()
	waitFor(t, "control.addr", func() bool {
		_, err := os.Stat(filepath.Join(ck, control.AddrFile))
		return err == nil
	})
	addr, token, err := control.Endpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(ck, control.TokenFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control.token: %v, %v: want mode 0600", fi, err)
	}
	spDir := filepath.Join(ck, "savepoints")
	outside := t.TempDir()
	for _, d := range []string{filepath.Join(outside, "x.inprogress"), filepath.Join(spDir, "y.inprogress")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "keep"), []byte("not weir's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	post := func(body string, hdr ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/savepoint", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	bearer := "Bearer " + token
	for _, c := range []struct {
		name string
		body string
		hdr  []string
		want int
	}{
		{"without the token", `{"path":"a"}`, nil, 401},
		{"with a wrong token", `{"path":"a"}`, []string{"Authorization", "Bearer 00000000000000000000000000000000"}, 401},
		{"from a foreign Origin", `{"path":"a"}`, []string{"Authorization", bearer, "Origin", "http://attacker.example"}, 403},
		{"as text/plain", `{"path":"a"}`, []string{"Authorization", bearer, "Content-Type", "text/plain"}, 415},
		{"with ..", `{"path":"../x"}`, []string{"Authorization", bearer}, 403},
		{"outside, absolute", `{"path":"` + filepath.Join(outside, "x") + `"}`, []string{"Authorization", bearer}, 403},
		{"over a foreign .inprogress", `{"path":"y"}`, []string{"Authorization", bearer}, 409},
	} {
		if code, body := post(c.body, c.hdr...); code != c.want {
			t.Errorf("savepoint %s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	for _, d := range []string{filepath.Join(outside, "x.inprogress"), filepath.Join(spDir, "y.inprogress")} {
		if b, err := os.ReadFile(filepath.Join(d, "keep")); err != nil || string(b) != "not weir's" {
			t.Errorf("%s was touched: %q, %v", d, b, err)
		}
	}
	if des, _ := os.ReadDir(outside); len(des) != 1 {
		t.Errorf("%d entries outside the savepoint directory, want the 1 that was there", len(des))
	}

	got, err := control.RequestSavepoint(context.Background(), addr, token, "sp1", true)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.EvalSymlinks(spDir)
	if got != filepath.Join(root, "sp1") {
		t.Fatalf("savepoint at %s, want %s", got, filepath.Join(root, "sp1"))
	}
	if _, err := os.Stat(filepath.Join(got, "_metadata")); err != nil {
		t.Fatalf("the savepoint is not complete: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a job stopped with a savepoint must end cleanly: %v", err)
	}
	for _, f := range []string{control.AddrFile, control.TokenFile} {
		if _, err := os.Stat(filepath.Join(ck, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after the job ended: %v", f, err)
		}
	}
}

func TestControlAddrNeedsCheckpointing(t *testing.T) {
	job := weir.NewJob("j", weir.ControlAddr("127.0.0.1:0"))
	weir.To(weir.FromSource(job, "src", weir.SliceSource([]int{1}), weir.NoWatermarks[int]()), weir.SinkFunc[int](func(context.Context, []int) error { return nil }))
	if err := job.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "needs Checkpointing") {
		t.Fatalf("Run: %v", err)
	}
}
