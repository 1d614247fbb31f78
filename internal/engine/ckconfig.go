package engine

import "github.com/weirstream/weir/internal/ckstore"

// ckConfig is what the checkpoint store needs of the job.
func (j *Job) ckConfig() ckstore.Config {
	cfg := ckstore.Config{
		Dir: j.cfg.ckDir, Retain: j.cfg.ckRetain, Logger: j.cfg.logger, Hook: j.cfg.ckHook,
		Job: j.name, MaxParallelism: j.cfg.maxParallelism, Options: j.cfg.String(), Metrics: &j.metrics.Checkpoints,
		RestoreFrom: j.cfg.restoreFrom, StartFresh: j.cfg.startFresh, CheckReplay: j.checkReplay,
	}
	return cfg
}
