package webauth

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGuard(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef"
	loop, err := NewGuard("127.0.0.1:9000", tok)
	if err != nil {
		t.Fatal(err)
	}
	open, err := NewGuard("127.0.0.1:9000", "")
	if err != nil {
		t.Fatal(err)
	}
	wild, err := NewGuard("0.0.0.0:9000", tok)
	if err != nil {
		t.Fatal(err)
	}
	lan, err := NewGuard("192.168.1.5:9000", tok)
	if err != nil {
		t.Fatal(err)
	}
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	for _, c := range []struct {
		name   string
		g      *Guard
		method string
		host   string
		header map[string]string
		cookie string
		want   int
	}{
		{"no token", loop, "POST", "127.0.0.1:9000", nil, "", 401},
		{"wrong token", loop, "POST", "127.0.0.1:9000", map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 32)}, "", 401},
		{"token prefix", loop, "POST", "127.0.0.1:9000", map[string]string{"Authorization": "Bearer " + tok[:31]}, "", 401},
		{"basic scheme", loop, "POST", "127.0.0.1:9000", map[string]string{"Authorization": "Basic " + tok}, "", 401},
		{"right token", loop, "POST", "127.0.0.1:9000", bearer, "", 200},
		{"lower-case scheme", loop, "POST", "127.0.0.1:9000", map[string]string{"Authorization": "bearer " + tok}, "", 200},
		{"cookie", loop, "POST", "127.0.0.1:9000", nil, tok, 200},
		{"wrong cookie", loop, "GET", "127.0.0.1:9000", nil, "nope", 401},
		{"GET needs the token too", loop, "GET", "127.0.0.1:9000", nil, "", 401},
		{"foreign Origin", loop, "POST", "127.0.0.1:9000", map[string]string{"Authorization": "Bearer " + tok, "Origin": "http://evil.example"}, "", 403},
		{"foreign Origin, same host other port", loop, "POST", "127.0.0.1:9000", map[string]string{"Authorization": "Bearer " + tok, "Origin": "http://127.0.0.1:8080"}, "", 403},
		{"null Origin", loop, "POST", "127.0.0.1:9000", map[string]string{"Authorization": "Bearer " + tok, "Origin": "null"}, "", 403},
		{"foreign Origin without token", loop, "POST", "127.0.0.1:9000", map[string]string{"Origin": "http://evil.example"}, "", 403},
		{"cross-site fetch", loop, "POST", "127.0.0.1:9000", map[string]string{"Authorization": "Bearer " + tok, "Sec-Fetch-Site": "cross-site"}, "", 403},
		{"same Origin", loop, "POST", "127.0.0.1:9000", map[string]string{"Authorization": "Bearer " + tok, "Origin": "http://127.0.0.1:9000", "Sec-Fetch-Site": "same-origin"}, "", 200},
		{"foreign Origin on GET (reads are guarded by the token)", loop, "GET", "127.0.0.1:9000", map[string]string{"Authorization": "Bearer " + tok, "Origin": "http://evil.example"}, "", 200},
		{"Host mismatch (DNS rebinding)", loop, "POST", "evil.example:9000", bearer, "", 403},
		{"Host mismatch on an open server", open, "GET", "evil.example:9000", nil, "", 403},
		{"Host another machine's IP", loop, "GET", "10.0.0.1:9000", bearer, "", 403},
		{"Host empty", loop, "GET", "", bearer, "", 403},
		{"Host localhost", loop, "GET", "localhost:9000", bearer, "", 200},
		{"Host IPv6 loopback", loop, "GET", "[::1]:9000", bearer, "", 200},
		{"open server on loopback", open, "GET", "127.0.0.1:9000", nil, "", 200},
		{"wildcard bind: any Host, token still needed", wild, "GET", "myhost.example:9000", nil, "", 401},
		{"wildcard bind with token", wild, "GET", "myhost.example:9000", bearer, "", 200},
		{"LAN bind: its IP", lan, "GET", "192.168.1.5:9000", bearer, "", 200},
		{"LAN bind: localhost is not it", lan, "GET", "localhost:9000", bearer, "", 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "/x", nil)
			r.Host = c.host
			for k, v := range c.header {
				r.Header.Set(k, v)
			}
			if c.cookie != "" {
				r.AddCookie(&http.Cookie{Name: CookieName, Value: c.cookie})
			}
			w := httptest.NewRecorder()
			called := false
			c.g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called = true })).ServeHTTP(w, r)
			if w.Code != c.want || called != (c.want == 200) {
				t.Fatalf("status %d (handler called: %v), want %d: %s", w.Code, called, c.want, w.Body)
			}
			if c.want == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without a Bearer challenge")
			}
		})
	}
}

func TestRequireJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"text/plain":                        false,
		"application/x-www-form-urlencoded": false,
		"multipart/form-data; boundary=x":   false,
		"":                                  false,
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader("{}"))
		r.Header.Set("Content-Type", ct)
		w := httptest.NewRecorder()
		if got := RequireJSON(w, r); got != want || !got && w.Code != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q: %v (status %d), want %v", ct, got, w.Code, want)
		}
	}
}

func TestToken(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if len(a) != 2*tokenBytes || a == b {
		t.Fatalf("tokens %q, %q: want %d hex digits, different", a, b, 2*tokenBytes)
	}
	// A file already there with a wide mode is replaced, not truncated.
	path := filepath.Join(t.TempDir(), "control.token")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteToken(path, a); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if got, err := ReadToken(path); err != nil || got != a {
		t.Fatalf("ReadToken: %q, %v", got, err)
	}
	if des, _ := os.ReadDir(filepath.Dir(path)); len(des) != 1 {
		t.Fatalf("%d files beside the token, want none", len(des)-1)
	}
}

func TestNewServerTimeouts(t *testing.T) {
	s := NewServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 {
		t.Fatalf("timeouts %v %v %v %v: all must be set", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout)
	}
}

func TestLoopbackDefault(t *testing.T) {
	for in, want := range map[string]string{
		":9249":        "127.0.0.1:9249",
		"9249":         "127.0.0.1:9249",
		"0.0.0.0:9249": "0.0.0.0:9249",
		"[::1]:1":      "[::1]:1",
	} {
		if got := LoopbackDefault(in); got != want {
			t.Errorf("LoopbackDefault(%q) = %q, want %q", in, got, want)
		}
	}
}

// WrapWith makes the same checks as Wrap and hands refusals to its deny
// function; TokenMatches compares a login's token.
func TestWrapWithAndTokenMatches(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef"
	g, err := NewGuard("127.0.0.1:9000", tok)
	if err != nil {
		t.Fatal(err)
	}
	var denied []int
	h := g.WrapWith(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }),
		func(w http.ResponseWriter, r *http.Request, code int, msg string) {
			denied = append(denied, code)
			w.WriteHeader(code)
		})
	for _, c := range []struct {
		host, auth, origin string
		want               int
	}{
		{"127.0.0.1:9000", "", "", 401},
		{"127.0.0.1:9000", "Bearer " + tok, "", 299},
		{"evil.example", "Bearer " + tok, "", 403},
		{"127.0.0.1:9000", "Bearer " + tok, "http://evil.example", 403},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Host = c.host
		r.Header.Set("Authorization", c.auth)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%+v: %d", c, w.Code)
		}
		if c.want == 401 && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("401 without a challenge")
		}
	}
	if len(denied) != 3 {
		t.Errorf("deny called %d times, want 3", len(denied))
	}
	open, _ := NewGuard("127.0.0.1:9000", "")
	for _, c := range []struct {
		g    *Guard
		tok  string
		want bool
	}{{g, tok, true}, {g, tok[:31], false}, {g, "", false}, {g, tok + "0", false}, {open, "", false}} {
		if got := c.g.TokenMatches(c.tok); got != c.want {
			t.Errorf("TokenMatches(%q) = %v", c.tok, got)
		}
	}
}
