package control

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/webauth"
)

// server starts an endpoint whose savepoint function records the paths it
// was asked for and creates them, as a job's would.
func server(t *testing.T) (s *Server, ckDir, spDir, token string, asked func() []string) {
	t.Helper()
	ckDir, spDir = t.TempDir(), filepath.Join(t.TempDir(), "savepoints")
	token, remove, err := WriteToken(ckDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	var mu sync.Mutex
	var paths []string
	s, err = Start(Config{
		Addr: "127.0.0.1:0", Dir: ckDir, Token: token, SavepointDir: spDir, SavepointTimeout: time.Minute,
		Savepoint: func(_ context.Context, path string, stop bool) (string, error) {
			mu.Lock()
			paths = append(paths, path)
			mu.Unlock()
			return path, os.MkdirAll(path, 0o755)
		},
		Status: func() any { return map[string]string{"job": "j"} },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, ckDir, spDir, token, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), paths...)
	}
}

func TestEndpointAuth(t *testing.T) {
	s, ckDir, spDir, token, asked := server(t)
	outside := t.TempDir()
	// Another program's directory beside the savepoint directory, and a
	// foreign .inprogress inside it: neither may be deleted.
	if err := os.MkdirAll(filepath.Join(outside, "x.inprogress"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "x.inprogress", "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(spDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(spDir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "nowhere"), filepath.Join(spDir, "dangling")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		method string
		path   string
		body   string
		header map[string]string
		host   string
		want   int
		wantSP string // the path the savepoint was asked for, if any
	}{
		{name: "no token", body: `{"path":"a"}`, header: map[string]string{"Authorization": ""}, want: 401},
		{name: "wrong token", body: `{"path":"a"}`, header: map[string]string{"Authorization": "Bearer " + strings.Repeat("f", 32)}, want: 401},
		{name: "right token", body: `{"path":"a"}`, want: 200, wantSP: "a"},
		{name: "nested name", body: `{"path":"team/b"}`, want: 200, wantSP: "team/b"},
		{name: "absolute path inside", body: `{"path":"` + filepath.Join(spDir, "c") + `"}`, want: 200, wantSP: "c"},
		{name: "foreign Origin", body: `{"path":"d"}`, header: map[string]string{"Origin": "http://evil.example"}, want: 403},
		{name: "Host mismatch", body: `{"path":"d"}`, host: "rebound.example", want: 403},
		{name: "text/plain body", body: `{"path":"d"}`, header: map[string]string{"Content-Type": "text/plain"}, want: 415},
		{name: "form body", body: `path=d`, header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, want: 415},
		{name: "unknown field", body: `{"path":"d","force":true}`, want: 400},
		{name: "no path", body: `{"stop":true}`, want: 400},
		{name: "path with ..", body: `{"path":"../x"}`, want: 403},
		{name: "path with .. inside", body: `{"path":"a/../../x"}`, want: 403},
		{name: "absolute path outside", body: `{"path":"` + filepath.Join(outside, "x") + `"}`, want: 403},
		{name: "the directory itself", body: `{"path":"` + spDir + `"}`, want: 403},
		{name: "through a symlink out", body: `{"path":"link/x"}`, want: 403},
		{name: "through a dangling symlink", body: `{"path":"dangling/x"}`, want: 403},
		{name: "status without token", method: "GET", path: "/v1/status", header: map[string]string{"Authorization": ""}, want: 401},
		{name: "status", method: "GET", path: "/v1/status", want: 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(asked())
			method, path := "POST", "/v1/savepoint"
			if c.method != "" {
				method, path = c.method, c.path
			}
			req, _ := http.NewRequest(method, "http://"+s.Addr()+path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			if c.host != "" {
				req.Host = c.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.want, body)
			}
			var out SavepointResponse
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatalf("answer %q is not JSON: %v", body, err)
			}
			got := asked()[before:]
			switch {
			case c.wantSP == "" && method == "POST" && len(got) > 0:
				t.Fatalf("refused, yet a savepoint was taken into %v", got)
			case c.wantSP != "":
				root, _ := filepath.EvalSymlinks(spDir)
				if want := filepath.Join(root, c.wantSP); len(got) != 1 || got[0] != want || out.Path != want {
					t.Fatalf("savepoint into %v (answer %q), want %s", got, out.Path, want)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "x.inprogress", "keep")); err != nil {
		t.Fatalf("a directory outside was touched: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a write went through the dangling symlink: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(ckDir, AddrFile)); err != nil || strings.TrimSpace(string(b)) != s.Addr() {
		t.Fatalf("%s: %q, %v", AddrFile, b, err)
	}
}

// The client finds the job through the checkpoint directory and sends the
// token; without the token file it fails before asking.
func TestClient(t *testing.T) {
	s, ckDir, spDir, _, _ := server(t)
	addr, token, err := Endpoint(ckDir)
	if err != nil || addr != s.Addr() {
		t.Fatalf("Endpoint: %q, %v", addr, err)
	}
	got, err := RequestSavepoint(context.Background(), addr, token, "sp1", false)
	root, _ := filepath.EvalSymlinks(spDir)
	if err != nil || got != filepath.Join(root, "sp1") {
		t.Fatalf("RequestSavepoint: %q, %v", got, err)
	}
	if _, err := RequestSavepoint(context.Background(), addr, "wrong", "sp2", false); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("a wrong token: %v", err)
	}
	if _, err := RequestSavepoint(context.Background(), addr, token, "/etc/sp3", false); err == nil || !strings.Contains(err.Error(), "outside the savepoint directory") {
		t.Fatalf("a path outside: %v", err)
	}
	os.Remove(filepath.Join(ckDir, TokenFile))
	if _, _, err := Endpoint(ckDir); err == nil {
		t.Fatal("Endpoint without the token file")
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(ckDir, AddrFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s left after Close: %v", AddrFile, err)
	}
}

func TestWriteTokenMode(t *testing.T) {
	dir := t.TempDir()
	tok, remove, err := WriteToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, TokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}
	if got, _ := webauth.ReadToken(filepath.Join(dir, TokenFile)); got != tok {
		t.Fatalf("token file holds %q", got)
	}
	remove()
	if _, err := os.Stat(filepath.Join(dir, TokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("token file after remove: %v", err)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.EvalSymlinks(dir)
	for _, c := range []struct {
		in, want string // want "": refused
	}{
		{"a", filepath.Join(root, "a")},
		{"a/b", filepath.Join(root, "a", "b")},
		{"./a", filepath.Join(root, "a")},
		{filepath.Join(dir, "a"), filepath.Join(root, "a")},
		{"", ""},
		{".", ""},
		{"..", ""},
		{"../a", ""},
		{"a/../b", ""},
		{dir, ""},
		{"/etc/passwd", ""},
		{filepath.Dir(dir), ""},
		{"a\x00b", ""},
	} {
		got, err := Resolve(dir, c.in)
		if c.want == "" && err == nil || c.want != "" && (err != nil || got != c.want) {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
