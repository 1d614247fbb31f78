package cli

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
)

// stateFlags are --state-backend and --state-dir: where keyed state lives
// (issue 37's first step: Process-based operators, SQL's group
// aggregations, Top-N and regular joins among them, move to Pebble; the
// others say so when the job starts).
type stateFlags struct {
	backend, dir string
}

func (s *stateFlags) add(f *pflag.FlagSet) {
	f.StringVar(&s.backend, "state-backend", "heap", "where keyed state lives: heap (memory) or pebble (on disk, larger than memory: the operators built on Process, and so every SQL operator that keeps keyed state (aggregations, window aggregations, Top-N, joins), and the Go API's Aggregate and Reduce over event-time tumbling, hopping and session windows; the job names those that stay in memory when it starts)")
	f.StringVar(&s.dir, "state-dir", "", "directory of Pebble's state with --state-backend pebble (default: a new temporary directory, removed afterwards)")
}

// options returns the job options of the flags; done removes a temporary
// directory they made.
func (s stateFlags) options() (opts []weir.JobOption, done func(), err error) {
	done = func() {}
	switch s.backend {
	case "", "heap":
		return nil, done, nil
	case "pebble":
		dir := s.dir
		if dir == "" {
			if dir, err = os.MkdirTemp("", "weir-state-"); err != nil {
				return nil, done, err
			}
			done = func() { os.RemoveAll(dir) }
		}
		return []weir.JobOption{weir.PebbleState(dir, 0)}, done, nil
	}
	return nil, done, fmt.Errorf("--state-backend %q: want heap or pebble", s.backend)
}
