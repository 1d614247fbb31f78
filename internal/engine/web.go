package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/web"
	"github.com/weirstream/weir/internal/webauth"
)

// runInfo is what the web server shows of a run besides its metrics:
// written by Run's goroutine, read by the server's.
type runInfo struct {
	state atomic.Pointer[string]
	start atomic.Int64 // unix ns; 0 before Run
	graph atomic.Pointer[webGraph]
}

type webGraph struct {
	ops   []web.Operator
	edges []web.Edge
}

func (r *runInfo) setState(s string) { r.state.Store(&s) }

// noteGraph records the graph as it is now: before compile with the
// parallelism asked for, after it as resolved (sources capped by their
// splits, forward edges between unequal parallelism turned rebalance).
// Called from Run's goroutine only, where compile changes the nodes.
func (j *Job) noteGraph() {
	g := &webGraph{ops: make([]web.Operator, len(j.nodes))}
	for i, n := range j.nodes {
		p := n.parallelism
		if p == 0 {
			p = j.cfg.parallelism
		}
		side := -1
		if n.sideOf != nil {
			side = n.sideOf.id
		}
		g.ops[i] = web.Operator{ID: n.id, Name: n.name, Parallelism: p, SideOutputOf: side}
		for _, e := range n.inputs {
			g.edges = append(g.edges, web.Edge{From: e.from.id, To: n.id, Kind: e.part.String(), Chained: e.chained})
		}
	}
	j.run.graph.Store(g)
}

// webJob describes the job to the web server.
func (j *Job) webJob() web.Job {
	w := web.Job{Name: j.name, State: web.StateCreated, Parallelism: j.cfg.parallelism}
	if s := j.run.state.Load(); s != nil {
		w.State = *s
	}
	if ns := j.run.start.Load(); ns != 0 {
		w.Start = time.Unix(0, ns)
	}
	if g := j.run.graph.Load(); g != nil {
		w.Operators, w.Edges = g.ops, g.edges
	}
	return w
}

// endState is Flink's name for how Run ended.
func endState(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return web.StateFinished
	case ctx.Err() != nil:
		return web.StateCanceled
	default:
		return web.StateFailed
	}
}

// webTokenPath is where the web server's token goes: the named file, else
// the checkpoint directory's control.token (already written), else the
// state directory's web.token.
func (j *Job) webTokenPath() (string, error) {
	switch {
	case j.cfg.webTokenFile != "":
		return j.cfg.webTokenFile, nil
	case j.localCkDir() != "":
		return filepath.Join(j.cfg.ckDir, control.TokenFile), nil
	case j.cfg.stateDir != "":
		return filepath.Join(j.cfg.stateDir, "web.token"), nil
	case j.cfg.ckDir != "":
		return "", fmt.Errorf("weir: the job's servers need a local place for their token, which a checkpoint directory in object storage (%s) is not: set WebTokenFile (--web-token-file)", j.cfg.ckDir)
	}
	return "", errors.New("weir: WebAddr needs a place for the job's token: set WebTokenFile (--web-token-file), or Checkpointing")
}

// startWeb starts the web server, which also serves the control endpoint,
// on the addresses asked for, with the run's token. It returns what stops
// it.
func (j *Job) startWeb(token string) (stop func(), err error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stopAll() // not stop: a failing return has set it to nil
		}
	}()
	var addrs []string
	controlOnly := 0 // addresses for the control endpoint alone, not announced as the dashboard
	if j.cfg.controlAddr != "" {
		addrs = append(addrs, j.cfg.controlAddr)
		if j.cfg.webAddr != j.cfg.controlAddr {
			controlOnly = 1
		}
	}
	if j.cfg.webAddr != "" && j.cfg.webAddr != j.cfg.controlAddr {
		addrs = append(addrs, j.cfg.webAddr)
	}
	tokenFile := filepath.Join(j.cfg.ckDir, control.TokenFile) // written by startServers
	if j.localCkDir() == "" && j.cfg.ckDir != "" {
		if tokenFile, err = j.webTokenPath(); err != nil {
			return nil, err
		}
	}
	if j.cfg.webAddr != "" {
		if tokenFile, err = j.webTokenPath(); err != nil {
			return nil, err
		}
		if j.cfg.ckDir == "" || tokenFile != filepath.Join(j.cfg.ckDir, control.TokenFile) {
			if err := os.MkdirAll(filepath.Dir(tokenFile), 0o755); err != nil {
				return nil, fmt.Errorf("weir: web token file: %w", err)
			}
			if err := webauth.WriteToken(tokenFile, token); err != nil {
				return nil, err
			}
			stops = append(stops, func() { os.Remove(tokenFile) })
		}
	}
	cfg := web.Config{
		Addrs: addrs, Token: token, TokenFile: tokenFile, Registry: j.metrics, Job: j.webJob,
		SavepointTimeout: j.cfg.ckTimeout, Status: j.status, Logger: j.cfg.logger, ControlAddrs: controlOnly,
	}
	if j.cfg.ckDir != "" {
		if j.localCkDir() != "" {
			cfg.AddrFile = filepath.Join(j.cfg.ckDir, control.AddrFile)
		}
		// The server listens before the tasks run: Job.Savepoint waits for
		// them within the request's context (job_running.go).
		cfg.Savepoint = j.Savepoint
		cfg.SavepointDir = j.cfg.savepointDir
		if cfg.SavepointDir == "" {
			cfg.SavepointDir = filepath.Join(j.cfg.ckDir, "savepoints")
		}
	} else {
		cfg.NoSavepoint = "weir: savepoints need Checkpointing (--checkpoint-dir)"
	}
	srv, err := web.Start(cfg)
	if err != nil {
		return nil, err
	}
	stops = append(stops, srv.Close)
	return stopAll, nil
}
