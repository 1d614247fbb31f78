package hooks

// GroupPartition is one input partition a process of a group-mode job
// owns, as the group runner reports it.
type GroupPartition struct {
	Topic     string
	Partition int32
	// Committed is the partition's committed offset as of this process's
	// last transaction; End its end (last stable offset) as the last
	// fetch saw it. -1: not known (yet).
	Committed, End int64
}

// GroupStatus receives the group runner's view of this process's
// membership, for the job's metrics and dashboard (what tasks a process
// owns: issue 15). The root package hands one in GroupJob.Status; the
// runner calls it from the group's callbacks and its commit loop, so its
// methods must be quick and safe from any goroutine.
type GroupStatus interface {
	// Assigned reports the partitions the process owns after a rebalance
	// changed them (the whole set, possibly empty), with the member id and
	// generation the group gave it.
	Assigned(member string, generation int32, parts []GroupPartition)
	// Committed reports, after a transaction committed, every partition
	// of the local run: Committed is the offset committed as of it (the
	// run's start for a partition that has not moved), End as last
	// fetched (-1: not yet).
	Committed(parts []GroupPartition)
}
