package crashtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Pacer paces the kills of a crash test's restarts by the job's progress:
// the kill window doubles after each kill after which Progress has not
// grown (up to 16 times), and halves again after each that saw it grow. A
// restarted process that needs longer than the window to get anything done
// (a loaded machine, or the race detector in the process, which the test
// command builds it with, GoBuild) would otherwise be killed over and over
// without progress, and a test with fixed windows could spend its time
// budget on kills. So the window settles where about every other restart
// gets something done; the kills still fall at random moments of the
// restarts, and as many of them.
type Pacer struct {
	// Progress is a number that grows when the job makes progress (part
	// files committed, checkpoints committed).
	Progress func() int64
	last     int64
	shift    int
}

// Window is the kill window for d, the one the test drew.
func (p *Pacer) Window(d time.Duration) time.Duration { return d << p.shift }

// Killed records a kill of the job.
func (p *Pacer) Killed() {
	if n := p.Progress(); n > p.last {
		p.last, p.shift = n, max(p.shift-1, 0)
	} else {
		p.shift = min(p.shift+1, 4)
	}
}

// PartFiles counts the committed part files (part-*) in dir: a Progress of
// the file sink's output directory.
func PartFiles(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir) // not there yet: nothing committed
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "part-") {
			n++
		}
	}
	return n
}

// CommittedCheckpoint is the id of the newest checkpoint of checkpoint
// directory dir whose output the job told its sinks to commit (the commit
// records in _committed, named by id), 0 if none: a Progress of a job with
// an exactly-once sink.
func CommittedCheckpoint(dir string) int64 {
	var id int64
	entries, _ := os.ReadDir(filepath.Join(dir, "_committed")) // not there yet: nothing committed
	for _, e := range entries {
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil {
			id = max(id, n)
		}
	}
	return id
}
