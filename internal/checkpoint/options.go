package checkpoint

import (
	"errors"
	"fmt"
	"log/slog"
)

// DefaultRetain is how many complete checkpoints a Store keeps by default.
const DefaultRetain = 3

// An Option configures Open and OpenPath.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	retain   int
	fs       FS
	logger   *slog.Logger
	readOnly bool

	verifyContents bool
}

func newConfig(opts []Option) (config, error) {
	c := config{retain: DefaultRetain, fs: Default, logger: slog.Default()}
	for _, o := range opts {
		o.apply(&c)
	}
	return c, c.validate()
}

func (c *config) validate() error {
	switch {
	case c.retain < 1:
		return fmt.Errorf("checkpoint: Retain(%d): must keep at least 1", c.retain)
	case c.fs == nil:
		return errors.New("checkpoint: WithFS(nil)")
	case c.logger == nil:
		return errors.New("checkpoint: WithLogger(nil)")
	}
	return nil
}

func (c *config) String() string {
	return fmt.Sprintf("retain=%d read-only=%t verify-contents=%t fs=%T",
		c.retain, c.readOnly, c.verifyContents, c.fs)
}

// Retain sets how many valid checkpoints the store keeps (default 3): after
// a checkpoint completes, older ones beyond the newest n valid ones are
// deleted. Savepoints are never deleted.
func Retain(n int) Option { return optionFunc(func(c *config) { c.retain = n }) }

// WithFS sets the file system (default: Default, the operating system's).
func WithFS(fs FS) Option { return optionFunc(func(c *config) { c.fs = fs }) }

// WithLogger sets the logger for skipped checkpoints, crash leftovers and
// pruning (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }

// ReadOnly opens a store for inspection, as the CLI does with the directory
// of a job that may be running: Open neither creates the directory nor
// removes in-progress checkpoints, and Begin fails.
func ReadOnly() Option { return optionFunc(func(c *config) { c.readOnly = true }) }

// VerifyContents makes Latest and List read every state file of a
// checkpoint and check its checksum (Checkpoint.Verify), so that a flipped
// bit in a state file also makes Latest fall back. It costs a full read of
// the checkpoint, which a restore then reads again.
func VerifyContents() Option { return optionFunc(func(c *config) { c.verifyContents = true }) }
