package webauth

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Timeouts of every server built by NewServer. A handler that legitimately
// takes longer to answer (a savepoint) extends its own write deadline with
// http.ResponseController.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 60 * time.Second
	maxHeaderBytes    = 64 << 10
)

// NewServer returns an http.Server for h with the package's timeouts.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// Listen listens on addr, on loopback if addr names no host.
func Listen(addr string) (net.Listener, error) {
	return net.Listen("tcp", LoopbackDefault(addr))
}

// LoopbackDefault puts 127.0.0.1 in front of an address that names no host
// (":9249" or "9249"): a server is reachable from other machines only when
// a host such as 0.0.0.0 is asked for.
func LoopbackDefault(addr string) string {
	if _, err := strconv.Atoi(addr); err == nil {
		return "127.0.0.1:" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// IsLoopback reports whether a bound address (host:port) is a loopback
// one.
func IsLoopback(bound string) bool {
	host, _, err := net.SplitHostPort(bound)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RequireJSON refuses (415) a request whose body is not declared as JSON.
// A browser can send text/plain, form or multipart bodies across sites
// without a CORS preflight; it cannot send application/json without one,
// and the servers answer no preflight.
func RequireJSON(w http.ResponseWriter, r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		Deny(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: want application/json", r.Header.Get("Content-Type")))
		return false
	}
	return true
}
