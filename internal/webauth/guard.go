package webauth

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// CookieName is the cookie that carries the token from a browser (set by
// a login link of the dashboard, SameSite=Strict).
const CookieName = "weir_token"

// Guard checks the requests of one server: Host, Origin and, if it has
// one, the token. Build it with NewGuard once the listener is bound.
type Guard struct {
	bound    net.IP // nil: bound to every address
	loopback bool
	token    []byte // empty: no token needed
}

// NewGuard returns the guard of a server listening on bound (the
// listener's address, host:port). A non-empty token is required on every
// request; an empty one leaves the server open to anyone who can reach it
// with the right Host (the metrics endpoint on loopback).
func NewGuard(bound, token string) (*Guard, error) {
	host, _, err := net.SplitHostPort(bound)
	if err != nil {
		return nil, fmt.Errorf("webauth: bound address %q: %w", bound, err)
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, fmt.Errorf("webauth: bound address %q: not an IP address", bound)
	}
	g := &Guard{token: []byte(token)}
	if !ip.IsUnspecified() {
		g.bound = ip
		g.loopback = ip.IsLoopback()
	}
	return g, nil
}

// NeedsToken reports whether the guard asks for a token.
func (g *Guard) NeedsToken() bool { return len(g.token) > 0 }

// Wrap returns next behind the guard's checks, in this order: Host (403),
// Origin on a state-changing method (403), token (401). Refusals are
// JSON (Deny).
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return g.WrapWith(next, func(w http.ResponseWriter, _ *http.Request, code int, msg string) { Deny(w, code, msg) })
}

// DenyFunc answers a refused request: code is 401 or 403, msg says why.
type DenyFunc func(w http.ResponseWriter, r *http.Request, code int, msg string)

// WrapWith is Wrap with refusals answered by deny (the dashboard answers a
// browser with a page pointing to its login). The checks are the same;
// a 401 carries the Bearer challenge before deny is called.
func (g *Guard) WrapWith(next http.Handler, deny DenyFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.HostAllowed(r.Host) {
			deny(w, r, http.StatusForbidden, fmt.Sprintf("Host %q is not this server's address", r.Host))
			return
		}
		if !safeMethod(r.Method) && !SameOrigin(r) {
			deny(w, r, http.StatusForbidden, "cross-origin request refused")
			return
		}
		if g.NeedsToken() && !g.Authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
			deny(w, r, http.StatusUnauthorized, "missing or wrong token (send Authorization: Bearer and the job's token)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TokenMatches reports whether tok is the guard's token, in constant time
// (the dashboard's login link). A guard without a token matches nothing:
// there is nothing to log in to.
func (g *Guard) TokenMatches(tok string) bool {
	return len(g.token) > 0 && subtle.ConstantTimeCompare([]byte(tok), g.token) == 1
}

// HostAllowed reports whether a request's Host header names this server.
// On loopback: an IP literal that is a loopback address, or "localhost";
// on a given address: that address as an IP literal. A page that rebinds
// its own name to 127.0.0.1 sends that name and is refused. A server
// bound to every address (0.0.0.0, ::) cannot know its names and accepts
// any: there, the token is the guard.
func (g *Guard) HostAllowed(hostport string) bool {
	if g.bound == nil {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.Equal(g.bound) || g.loopback && ip.IsLoopback()
	}
	return g.loopback && strings.EqualFold(host, "localhost")
}

// Authorized reports whether r carries the token, as a Bearer
// Authorization header or as the CookieName cookie, compared in constant
// time.
func (g *Guard) Authorized(r *http.Request) bool {
	if len(g.token) == 0 {
		return true
	}
	if scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(cred)), g.token) == 1
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return subtle.ConstantTimeCompare([]byte(c.Value), g.token) == 1
	}
	return false
}

// LoginCookie is the cookie that a login link sets in a browser: HttpOnly
// (no script reads it) and SameSite=Strict (no other site's page sends it).
// It is kept for LoginCookieAge, across browser restarts: the token it
// holds lives as long as the job (a new one at every start), so the login
// lasts as long as the token does.
func LoginCookie(token string) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		MaxAge: int(LoginCookieAge.Seconds())}
}

// LoginCookieAge is how long a browser keeps the login cookie.
const LoginCookieAge = 30 * 24 * time.Hour

// SameOrigin reports whether r comes from no browser page or from a page
// of this server: no Origin header (curl, `weir savepoint`), or an Origin
// whose host:port is the request's Host. A browser's Sec-Fetch-Site, when
// present, must say so too. "null" (a sandboxed frame, a file: page) is
// foreign.
func SameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// Deny answers with code and a JSON body {"error": msg}.
func Deny(w http.ResponseWriter, code int, msg string) {
	WriteJSON(w, code, map[string]string{"error": msg})
}

// WriteJSON answers with code and v as JSON.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
