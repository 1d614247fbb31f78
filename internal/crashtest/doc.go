// Package crashtest holds the crash test of exactly-once recovery: a real
// process (crashjob) running a stateful checkpointed job into the
// exactly-once file sink is killed with SIGKILL at random moments and at
// failpoints inside the checkpoint protocol, restarted each time, and its
// committed output must equal, record for record, that of a run without
// failures.
//
//	go test ./internal/crashtest/                     # 50 kills
//	WEIR_CRASH_KILLS=2000 go test -timeout 2h ./internal/crashtest/
package crashtest
