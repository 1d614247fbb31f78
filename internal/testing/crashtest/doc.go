// Package crashtest holds the crash test of exactly-once recovery: a real
// process (crashjob) running a stateful checkpointed job into the
// exactly-once file sink is killed with SIGKILL at random moments and at
// failpoints inside the checkpoint protocol, restarted each time, and its
// committed output must equal, record for record, that of a run without
// failures. It runs with heap state, and with Pebble state and incremental
// checkpoints (then also checking that the shared area of the checkpoint
// directory holds only files a retained checkpoint lists).
//
//	go test ./internal/testing/crashtest/                     # 50 kills (heap), 20 (Pebble)
//	WEIR_CRASH_KILLS=2000 go test -timeout 2h ./internal/testing/crashtest/   # 2000 and 800
//	WEIR_CRASH_SEED=N go test -run TestX ./internal/testing/crashtest/   # replay the seed a run logged
//
// The programs the tests start are built with GoBuild: with -race when the
// test binary has it, as under the test command (scripts/test.sh), so that
// they reuse the race build's packages instead of compiling the module a
// second time without the race detector.
//
// Every randomized crash test (here and in connector/kafka, connector/postgres)
// takes its seed from Seed, which logs it.
package crashtest
