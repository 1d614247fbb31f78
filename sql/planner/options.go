package planner

import (
	"io"
	"time"

	"github.com/weirstream/weir"
)

// Option configures a Session or Run.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	vars          map[string]string
	jobOpts       []weir.JobOption
	parallelism   int
	checkpointDir string
	interval      time.Duration
	stdout        io.Writer
	logDir        string
	name          string
	funcs         []funcDef
	funcDir       string
	stateDir      string
}

// Define sets the value of a ${name} variable of the statements.
func Define(name, value string) Option {
	return optionFunc(func(c *config) { c.vars[name] = value })
}

// JobOptions are passed to weir.NewJob for the jobs the session plans
// (state backend, restarts, metrics and control addresses...).
func JobOptions(opts ...weir.JobOption) Option {
	return optionFunc(func(c *config) { c.jobOpts = append(c.jobOpts, opts...) })
}

// StateDir is where keyed state lives when SET 'state.backend.type' =
// 'rocksdb' (or 'pebble') names no 'state.backend.rocksdb.localdir'.
func StateDir(dir string) Option { return optionFunc(func(c *config) { c.stateDir = dir }) }

// Parallelism is the jobs' default parallelism (SET
// 'parallelism.default' overrides it).
func Parallelism(n int) Option { return optionFunc(func(c *config) { c.parallelism = n }) }

// Checkpointing makes the jobs checkpoint every interval into dir.
func Checkpointing(interval time.Duration, dir string) Option {
	return optionFunc(func(c *config) { c.interval, c.checkpointDir = interval, dir })
}

// Stdout is where SELECT results, SHOW, DESCRIBE and EXPLAIN print, and
// where 'print' tables write (default os.Stdout).
func Stdout(w io.Writer) Option { return optionFunc(func(c *config) { c.stdout = w }) }

// LogDir is the embedded log's directory for 'weir-log' tables.
func LogDir(dir string) Option { return optionFunc(func(c *config) { c.logDir = dir }) }

// JobName names the planned job (default "sql").
func JobName(name string) Option { return optionFunc(func(c *config) { c.name = name }) }
