package engine

// BatchSize is the job's batch size (the BatchSize option, 1024 by
// default): the most records an operator emits before it pushes them on.
// An operator that reuses the memory of the records it emits once they
// have been pushed (the SQL planner's Calc into a sink that does not keep
// rows) sizes its buffers by it.
func (j *Job) BatchSize() int { return max(1, j.cfg.batchSize) }
