package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/webauth"
)

// Job states, Flink's names.
const (
	StateCreated    = "CREATED"
	StateRunning    = "RUNNING"
	StateRestarting = "RESTARTING"
	StateFinished   = "FINISHED"
	StateFailed     = "FAILED"
	StateCanceled   = "CANCELED"
)

// Config is what Start needs.
type Config struct {
	// Addrs to listen on, loopback for an address without a host (at
	// least one; the web address and the control endpoint's, when both
	// are asked for: one handler, a listener each).
	Addrs []string
	// Token is the job's token, required on everything but /login.
	Token string
	// TokenFile is where the token is, for the log line.
	TokenFile string
	// AddrFile, if set, gets the first listener's address while the
	// server runs (control.AddrFile, where `weir savepoint` looks).
	AddrFile string
	// Registry holds the job's counters.
	Registry *metrics.Registry
	// Job describes the job: called on every request, it must be cheap
	// and safe from any goroutine.
	Job func() Job
	// Savepoint takes a savepoint into path (absolute, inside
	// SavepointDir); with stop, the job then ends. Nil: savepoints are
	// refused with NoSavepoint.
	Savepoint        func(ctx context.Context, path string, stop bool) (string, error)
	NoSavepoint      string
	SavepointDir     string
	SavepointTimeout time.Duration
	// Status answers the control endpoint's GET /v1/status.
	Status func() any
	// Now is the wall clock of the rates (default time.Now); SampleEvery
	// the period of the sampler (default 1s; < 0: none, for tests that
	// drive it through Server.sample); Window the span the rates average
	// over (default 10s).
	Now         func() time.Time
	SampleEvery time.Duration
	Window      time.Duration
	Logger      *slog.Logger
	// ControlAddrs is how many of the first Addrs are there for the
	// control endpoint (--control-addr, often a random port) rather than
	// for the dashboard: their listeners are logged as "control endpoint
	// listening", the others' as "web dashboard listening", so a user
	// sees one dashboard line, with the address they asked for.
	ControlAddrs int
}

// Job is the description of the job that Config.Job returns.
type Job struct {
	Name        string
	State       string
	Start       time.Time // zero before the job starts
	Parallelism int       // the job's default
	Operators   []Operator
	Edges       []Edge
}

// Operator is a node of the job graph.
type Operator struct {
	ID          int
	Name        string
	Parallelism int
	// SideOutputOf is the operator whose late events this node receives
	// (a side output has no input edge), or -1.
	SideOutputOf int
}

// Edge connects two operators.
type Edge struct {
	From, To int
	Kind     string // forward, hash, rebalance or broadcast
	Chained  bool   // runs in its input's task, no queue in between
}

//go:embed assets
var assets embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"lower": strings.ToLower,
}).ParseFS(assets, "assets/*.html"))

// Server is a running web server.
type Server struct {
	cfg   Config
	lns   []net.Listener
	srvs  []*http.Server
	rates *sampler
	stop  chan struct{}
	done  sync.WaitGroup
	once  sync.Once
}

// Start listens on every address of cfg.Addrs and serves until Close.
func Start(cfg Config) (_ *Server, err error) {
	if cfg.Token == "" || cfg.Registry == nil || cfg.Job == nil || len(cfg.Addrs) == 0 {
		return nil, errors.New("weir: web server: needs an address, a token, a registry and a job")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SampleEvery == 0 {
		cfg.SampleEvery = time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Second
	}
	if cfg.Status == nil {
		cfg.Status = func() any { return map[string]string{"job": cfg.Job().Name} }
	}
	s := &Server{cfg: cfg, rates: newSampler(cfg.Window), stop: make(chan struct{})}
	defer func() {
		if err != nil {
			for _, ln := range s.lns {
				ln.Close()
			}
		}
	}()
	api := s.mux()
	for _, addr := range cfg.Addrs {
		ln, err := webauth.Listen(addr)
		if err != nil {
			return nil, fmt.Errorf("weir: web server on %s: %w", addr, err)
		}
		s.lns = append(s.lns, ln)
		guard, err := webauth.NewGuard(ln.Addr().String(), cfg.Token)
		if err != nil {
			return nil, err
		}
		s.srvs = append(s.srvs, webauth.NewServer(headers(s.routes(guard, api))))
	}
	if cfg.AddrFile != "" {
		// Written aside and renamed: a client polling for the file never
		// reads it empty.
		tmp := cfg.AddrFile + ".tmp"
		err := os.WriteFile(tmp, []byte(s.lns[0].Addr().String()+"\n"), 0o644)
		if err == nil {
			err = os.Rename(tmp, cfg.AddrFile)
		}
		if err != nil {
			os.Remove(tmp)
			return nil, fmt.Errorf("weir: web server: %w", err)
		}
	}
	s.sample()
	if cfg.SampleEvery > 0 {
		s.done.Add(1)
		go s.sampleLoop()
	}
	for i, srv := range s.srvs {
		go srv.Serve(s.lns[i])
		switch {
		case cfg.Logger == nil:
		case i < cfg.ControlAddrs:
			cfg.Logger.Info("control endpoint listening", "addr", s.lns[i].Addr().String(), "token_file", cfg.TokenFile)
		default:
			cfg.Logger.Info("web dashboard listening", "url", "http://"+s.lns[i].Addr().String()+"/", "token_file", cfg.TokenFile,
				"login", "open /login?token=TOKEN with the file's contents")
		}
	}
	return s, nil
}

// Addr is the address of the first listener.
func (s *Server) Addr() string { return s.lns[0].Addr().String() }

// Addrs are the addresses of every listener, in Config.Addrs' order.
func (s *Server) Addrs() []string {
	out := make([]string, len(s.lns))
	for i, ln := range s.lns {
		out[i] = ln.Addr().String()
	}
	return out
}

// Close stops the server (an answer being written gets a second) and
// removes AddrFile. It is idempotent.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.stop)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, srv := range s.srvs {
			srv.Shutdown(ctx)
		}
		s.done.Wait()
		if s.cfg.AddrFile != "" {
			os.Remove(s.cfg.AddrFile)
		}
	})
}

func (s *Server) sampleLoop() {
	defer s.done.Done()
	t := time.NewTicker(s.cfg.SampleEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sample()
		}
	}
}

// routes puts the guard in front of everything but the login link, which
// checks the Host only (it is how a browser gets the token in).
func (s *Server) routes(g *webauth.Guard, api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		if !g.HostAllowed(r.Host) {
			s.deny(w, r, http.StatusForbidden, fmt.Sprintf("Host %q is not this server's address", r.Host))
			return
		}
		if tok := r.URL.Query().Get("token"); tok == "" || !g.TokenMatches(tok) {
			msg := "no token given"
			if tok != "" {
				msg = "wrong token"
			}
			s.deny(w, r, http.StatusUnauthorized, msg)
			return
		}
		http.SetCookie(w, webauth.LoginCookie(s.cfg.Token))
		// 303: the next request is a GET of / without the token in its
		// URL, so the token stays out of the address bar and history.
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	mux.Handle("/", g.WrapWith(api, s.deny))
	return mux
}

// deny answers a refusal: JSON under /v1/, a page elsewhere, which shows
// nothing of the job (no name, no operator), only how to log in.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		webauth.Deny(w, code, msg)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	pages.ExecuteTemplate(w, "denied.html", struct {
		Code    int
		Status  string
		Message string
		Login   bool
	}{code, http.StatusText(code), msg, code == http.StatusUnauthorized})
}

// mux serves the authenticated routes.
func (s *Server) mux() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /v1/job", s.getJob)
	mux.HandleFunc("GET /v1/checkpoints", s.getCheckpoints)
	mux.HandleFunc("POST /v1/savepoints", s.postSavepoint(false))
	mux.HandleFunc("POST /v1/stop", s.postSavepoint(true))
	// The control endpoint's routes, so that `weir savepoint` works
	// against this server too.
	sp := s.cfg.Savepoint
	if sp == nil {
		sp = func(context.Context, string, bool) (string, error) { return "", errors.New(s.cfg.NoSavepoint) }
	}
	old := control.Config{Savepoint: sp, SavepointDir: s.cfg.SavepointDir, SavepointTimeout: s.cfg.SavepointTimeout, Status: s.cfg.Status}.Handler()
	mux.Handle("POST /v1/savepoint", old)
	mux.Handle("GET /v1/status", old)
	// Refusals in JSON, as every answer of the API.
	methods := map[string]string{"/v1/job": "GET", "/v1/checkpoints": "GET", "/v1/status": "GET",
		"/v1/savepoints": "POST", "/v1/stop": "POST", "/v1/savepoint": "POST"}
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		if m, ok := methods[r.URL.Path]; ok {
			w.Header().Set("Allow", m)
			webauth.Deny(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, m))
			return
		}
		webauth.Deny(w, http.StatusNotFound, fmt.Sprintf("no API %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// index renders the dashboard's page. The operators are in the page
// itself, so that it says something before its script first polls (and
// without script at all).
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	j := s.cfg.Job()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	pages.ExecuteTemplate(w, "index.html", struct {
		Job
		Group *metrics.GroupSnapshot
	}{j, groupOf(s.cfg.Registry)})
}

// headers sets what every answer carries: no caching (job data behind a
// token), no framing, no referrer (the login URL holds the token), and a
// content security policy that allows this server's own files only.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		next.ServeHTTP(w, r)
	})
}
