package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/weirstream/weir/internal/webauth"
)

// Files the endpoint writes to the checkpoint directory while it runs.
const (
	// AddrFile holds the endpoint's address (host:port and a newline).
	AddrFile = "control.addr"
	// TokenFile holds the job's token (mode 0600).
	TokenFile = "control.token"
)

// SavepointRequest is the body of POST /v1/savepoint. Path is a name under
// the job's savepoint directory, or an absolute path inside it.
type SavepointRequest struct {
	Path string `json:"path"`
	Stop bool   `json:"stop"`
}

// SavepointResponse is its answer, and the body of every refusal.
type SavepointResponse struct {
	Path  string `json:"path,omitempty"`
	Error string `json:"error,omitempty"`
}

// Config is what Start needs.
type Config struct {
	// Addr to listen on (loopback if it names no host).
	Addr string
	// Dir is the checkpoint directory, where AddrFile goes (TokenFile is
	// written by WriteToken).
	Dir string
	// Token is the job's token, required on every request.
	Token string
	// SavepointDir confines the paths of savepoint requests; created on
	// the first request if missing.
	SavepointDir string
	// Savepoint takes a savepoint into path (absolute, inside SavepointDir)
	// and returns where it is.
	Savepoint func(ctx context.Context, path string, stop bool) (string, error)
	// SavepointTimeout bounds a savepoint; the answer's write deadline is
	// extended by it.
	SavepointTimeout time.Duration
	// Status describes the job for GET /v1/status.
	Status func() any
	Logger *slog.Logger
}

// Server is a running control endpoint.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	file string
}

// Start listens on cfg.Addr, writes the address to Dir/AddrFile and serves
// until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.Token == "" || cfg.Dir == "" || cfg.SavepointDir == "" {
		return nil, errors.New("weir: control endpoint: needs a token, a checkpoint directory and a savepoint directory")
	}
	ln, err := webauth.Listen(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("weir: control endpoint on %s: %w", cfg.Addr, err)
	}
	guard, err := webauth.NewGuard(ln.Addr().String(), cfg.Token)
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{ln: ln, srv: webauth.NewServer(guard.Wrap(cfg.mux())), file: filepath.Join(cfg.Dir, AddrFile)}
	if err := os.MkdirAll(cfg.Dir, 0o755); err == nil {
		err = os.WriteFile(s.file, []byte(ln.Addr().String()+"\n"), 0o644)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("weir: control endpoint: %w", err)
	}
	go s.srv.Serve(ln)
	if cfg.Logger != nil {
		cfg.Logger.Info("control endpoint listening", "addr", ln.Addr().String(), "token_file", filepath.Join(cfg.Dir, TokenFile))
	}
	return s, nil
}

// Handler serves the endpoint's routes (POST /v1/savepoint, GET
// /v1/status) without a guard, for a server that puts its own in front:
// the web dashboard's, which serves them as an alias of its own API. Addr
// and Dir are not used.
func (cfg Config) Handler() http.Handler { return cfg.mux() }

func (cfg *Config) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/savepoint", func(w http.ResponseWriter, r *http.Request) {
		if !webauth.RequireJSON(w, r) {
			return
		}
		var req SavepointRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || req.Path == "" {
			webauth.WriteJSON(w, http.StatusBadRequest, SavepointResponse{Error: `want {"path": NAME, "stop": bool}`})
			return
		}
		if err := os.MkdirAll(cfg.SavepointDir, 0o755); err != nil {
			webauth.WriteJSON(w, http.StatusInternalServerError, SavepointResponse{Error: err.Error()})
			return
		}
		path, err := Resolve(cfg.SavepointDir, req.Path)
		if err != nil {
			webauth.WriteJSON(w, http.StatusForbidden, SavepointResponse{Error: err.Error()})
			return
		}
		// A savepoint may take up to its timeout: the server's write
		// timeout is for clients that stall, not for this wait.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(cfg.SavepointTimeout + webauth.WriteTimeout))
		got, err := cfg.Savepoint(r.Context(), path, req.Stop)
		if err != nil {
			webauth.WriteJSON(w, http.StatusConflict, SavepointResponse{Error: err.Error()})
			return
		}
		webauth.WriteJSON(w, http.StatusOK, SavepointResponse{Path: got})
	})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		webauth.WriteJSON(w, http.StatusOK, cfg.Status())
	})
	return mux
}

// Addr is the address the endpoint listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the endpoint and removes AddrFile.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
	os.Remove(s.file)
}

// WriteToken makes a new token and writes it to dir/TokenFile (mode 0600);
// remove deletes the file.
func WriteToken(dir string) (token string, remove func(), err error) {
	if token, err = webauth.NewToken(); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("weir: token: %w", err)
	}
	path := filepath.Join(dir, TokenFile)
	if err := webauth.WriteToken(path, token); err != nil {
		return "", nil, fmt.Errorf("weir: %w", err)
	}
	return token, func() { os.Remove(path) }, nil
}
