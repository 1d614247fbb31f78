package weir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// ControlFile is the name of the file, in the checkpoint directory, where a
// running job writes the address of its control endpoint, so that
// `weir savepoint --checkpoint-dir DIR` finds it.
const ControlFile = "control.addr"

// ControlAddr serves the job's control endpoint on addr while it runs:
// POST /v1/savepoint {"path": "...", "stop": false} takes a savepoint (see
// Job.Savepoint), GET /v1/status describes the job. An address without a
// host (":0") listens on loopback only; nothing is executed that the
// request carries, only the savepoint into the given directory.
func ControlAddr(addr string) Option {
	return option{fmt.Sprintf("ControlAddr(%q)", addr), scopeJob, func(c *config) { c.controlAddr = addr }}
}

// SavepointRequest is the body of POST /v1/savepoint.
type SavepointRequest struct {
	Path string `json:"path"`
	Stop bool   `json:"stop"`
}

// SavepointResponse is its answer.
type SavepointResponse struct {
	Path  string `json:"path,omitempty"`
	Error string `json:"error,omitempty"`
}

type controlServer struct {
	srv  *http.Server
	ln   net.Listener
	file string
}

func (j *Job) startControl() (*controlServer, error) {
	addr := metrics.LoopbackDefault(j.cfg.controlAddr)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("weir: control endpoint on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/savepoint", func(w http.ResponseWriter, r *http.Request) {
		var req SavepointRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil || req.Path == "" {
			writeJSON(w, http.StatusBadRequest, SavepointResponse{Error: "want {\"path\": DIR, \"stop\": bool}"})
			return
		}
		path, err := j.Savepoint(r.Context(), req.Path, req.Stop)
		if err != nil {
			writeJSON(w, http.StatusConflict, SavepointResponse{Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, SavepointResponse{Path: path})
	})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		c := &j.metrics.Checkpoints
		writeJSON(w, http.StatusOK, map[string]any{
			"job": j.name, "checkpoints_completed": c.Completed.Load(), "last_checkpoint_id": c.LastID.Load(),
			"restarts": c.Restarts.Load(),
		})
	})
	s := &controlServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go s.srv.Serve(ln)
	if j.cfg.ckDir != "" {
		s.file = filepath.Join(j.cfg.ckDir, ControlFile)
		if err := os.MkdirAll(j.cfg.ckDir, 0o755); err == nil {
			_ = os.WriteFile(s.file, []byte(ln.Addr().String()+"\n"), 0o644)
		}
	}
	j.cfg.logger.Info("control endpoint listening", "addr", ln.Addr().String())
	return s, nil
}

func (s *controlServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
	if s.file != "" {
		os.Remove(s.file)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// RequestSavepoint asks the job whose control endpoint listens at addr for
// a savepoint into path, as `weir savepoint` does.
func RequestSavepoint(ctx context.Context, addr, path string, stop bool) (string, error) {
	body, _ := json.Marshal(SavepointRequest{Path: path, Stop: stop})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/savepoint", bytesReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("weir: control endpoint %s: %w", addr, err)
	}
	defer resp.Body.Close()
	var out SavepointResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", fmt.Errorf("weir: control endpoint %s: bad answer: %w", addr, err)
	}
	if out.Error != "" {
		return "", errors.New(out.Error)
	}
	return out.Path, nil
}
