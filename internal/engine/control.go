package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/ckstore"
	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/webauth"
)

// CheckpointStage names a point in the completion of a checkpoint.
type CheckpointStage = ckstore.Stage

// The stages CheckpointHook reports, in order.
const (
	StageStateFile    = ckstore.StageStateFile
	StageFilesWritten = ckstore.StageFilesWritten
	StageComplete     = ckstore.StageComplete
	StageCommitted    = ckstore.StageCommitted
)

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
	switch {
	case j.localCkDir() != "":
		var remove func()
		if token, remove, err = control.WriteToken(j.cfg.ckDir); err != nil {
			return nil, err
		}
		stops = append(stops, remove)
	case j.cfg.ckDir != "":
		// a checkpoint directory in object storage holds no token: it goes
		// to the web token file (or the state directory)
		path, err := j.webTokenPath()
		if err != nil {
			return nil, err
		}
		if token, err = webauth.NewToken(); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("weir: web token file: %w", err)
		}
		if err := webauth.WriteToken(path, token); err != nil {
			return nil, err
		}
		stops = append(stops, func() { os.Remove(path) })
	case j.cfg.webAddr != "":
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

// localCkDir is the checkpoint directory when it is on the local disk
// (where the control endpoint's token and address files go), "" when
// there is none or it is in object storage (s3://).
func (j *Job) localCkDir() string {
	if checkpoint.Remote(j.cfg.ckDir) {
		return ""
	}
	return j.cfg.ckDir
}
