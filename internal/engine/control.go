package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/ckstore"
	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/webauth"
)

// ControlAddr serves the job's control endpoint on addr while it runs
// (loopback unless addr names a host; ":0" picks a free port):
// POST /v1/savepoint {"path": NAME, "stop": false} takes a savepoint into
// NAME under the savepoint directory (see SavepointDir and Job.Savepoint),
// GET /v1/status describes the job. It needs Checkpointing: the endpoint
// writes its address (control.addr) and a new random token (control.token,
// mode 0600) to the checkpoint directory, and answers only requests that
// carry the token as "Authorization: Bearer TOKEN", with no foreign Origin
// and a Host naming the bound address. `weir savepoint --checkpoint-dir
// DIR` reads both files.
func ControlAddr(addr string) Option {
	return option{fmt.Sprintf("ControlAddr(%q)", addr), scopeJob, func(c *config) { c.controlAddr = addr }}
}

// SavepointDir confines the savepoints asked for through the control
// endpoint to dir (default: DIR/savepoints, DIR being the checkpoint
// directory): a request names a path under it, or an absolute path that
// resolves (symbolic links followed) inside it; ".." is refused. Job.Savepoint,
// called by the program itself, is not confined.
func SavepointDir(dir string) Option {
	return option{fmt.Sprintf("SavepointDir(%q)", dir), scopeJob, func(c *config) { c.savepointDir = dir }}
}

// CheckpointStage names a point in the completion of a checkpoint.
type CheckpointStage = ckstore.Stage

// The stages CheckpointHook reports, in order.
const (
	StageStateFile    = ckstore.StageStateFile
	StageFilesWritten = ckstore.StageFilesWritten
	StageComplete     = ckstore.StageComplete
	StageCommitted    = ckstore.StageCommitted
)

// CheckpointHook calls fn at each stage of every checkpoint, from the
// coordinator's goroutine. It is for weir's crash tests and demo (kill the
// process between pre-commit and commit), not part of the public API; fn
// must be quick.
func CheckpointHook(fn func(stage CheckpointStage, id int64)) Option {
	return option{"CheckpointHook", scopeJob, func(c *config) { c.ckHook = fn }}
}

// FirstCheckpointAfter makes the first periodic checkpoint of each
// execution attempt due d after its start (at most one interval), instead
// of at a random time in [0, interval] (coordinator.RandomFirstDelay). It
// is for tests that must see no periodic checkpoint or a fixed phase.
func FirstCheckpointAfter(d time.Duration) Option {
	return option{fmt.Sprintf("FirstCheckpointAfter(%v)", d), scopeJob, func(c *config) {
		c.ckFirst = func(time.Duration) time.Duration { return d }
	}}
}

// startServers starts the metrics endpoint and the web server (which
// serves the control endpoint too) that the job asks for, with the job's
// token when one is needed, and returns what stops them.
func (j *Job) startServers() (stop func(), err error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stopAll()
		}
	}()
	if j.cfg.metricsAddr == "" && j.cfg.controlAddr == "" && j.cfg.webAddr == "" {
		return stopAll, nil
	}
	if j.cfg.controlAddr != "" && j.cfg.ckDir == "" {
		return nil, errors.New("weir: ControlAddr needs Checkpointing: the endpoint's address and token are written to the checkpoint directory")
	}
	// One token per run, shared by the servers: it lives in the checkpoint
	// directory (or the web server's token file), so without either only
	// a loopback metrics endpoint can run.
	var token string
	if j.cfg.ckDir != "" {
		var remove func()
		if token, remove, err = control.WriteToken(j.cfg.ckDir); err != nil {
			return nil, err
		}
		stops = append(stops, remove)
	} else if j.cfg.webAddr != "" {
		if token, err = webauth.NewToken(); err != nil {
			return nil, err
		}
	}
	if j.cfg.metricsAddr != "" {
		srv, err := metrics.Serve(j.cfg.metricsAddr, j.metrics, token)
		if err != nil {
			return nil, err
		}
		stops = append(stops, func() { srv.Close() })
		j.cfg.logger.Info("metrics listening", "addr", "http://"+srv.Addr()+"/metrics", "token", srv.NeedsToken())
	}
	if j.cfg.controlAddr != "" || j.cfg.webAddr != "" {
		stopWeb, err := j.startWeb(token)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stopWeb)
	}
	return stopAll, nil
}

// status is the answer of GET /v1/status.
func (j *Job) status() any {
	c := &j.metrics.Checkpoints
	return map[string]any{
		"job": j.name, "checkpoints_completed": c.Completed.Load(), "last_checkpoint_id": c.LastID.Load(),
		"restarts": c.Restarts.Load(),
	}
}
