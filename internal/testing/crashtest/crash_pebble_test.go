package crashtest

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// pebbleKills is the number of kills of the Pebble variant: 20, or 2/5 of
// WEIR_CRASH_KILLS (which the heap variant takes whole).
func pebbleKills() int {
	if s := os.Getenv("WEIR_CRASH_KILLS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			if n <= 0 {
				return 0
			}
			return max(1, n*2/5)
		}
	}
	return 20
}

// pebbleKillsPerRound bounds the kills of one round of the Pebble variant:
// after that many, the job is left to complete, and the round's output and
// checkpoint directory are checked. Its kills come later than the heap
// variant's (up to a second), so that they spread over the whole run.
const pebbleKillsPerRound = 10

// pebbleArgs are the crash job's flags for start number start of a round
// in root: Pebble state in a directory of the start's own (as on a new
// machine), incremental checkpoints in the checkpoint directory all starts
// share.
func pebbleArgs(root string, start int, extra ...string) []string {
	return args(root, append([]string{
		"--state", "pebble", "--state-dir", stateDir(root, start), "--incremental",
	}, extra...)...)
}

// stateDir is the Pebble state dir of every start of a round, reused as a
// deployment would: each process works in a proc-* directory of its own
// there, and removes those of killed processes when it starts.
func stateDir(root string, start int) string {
	return filepath.Join(root, "state")
}

// TestKillAndRestartPebbleIncremental is TestKillAndRestart with the keyed
// counter's state in Pebble and incremental checkpoints, rounds at
// parallelism 2 and 1 in turn: SIGKILL at random
// moments and at the failpoints of the checkpoint protocol (at the first
// to fourth checkpoint of a start), a restart each time (with an empty
// local state directory: the state comes from the checkpoint's files, the
// SST files in DIR/shared/ among them), and the committed output must equal
// that of a run without failures, record for record. After each round, the
// shared area must hold only files that a retained checkpoint lists
// (retention left no garbage), every retained checkpoint must verify, and
// the completed start must have removed its local state. Over the run, some
// checkpoint must have listed a shared file that an earlier one uploaded
// (else the incremental path went untested).
func TestKillAndRestartPebbleIncremental(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	n := pebbleKills()
	if n == 0 {
		t.Skip("WEIR_CRASH_KILLS=0")
	}
	bin := build(t)
	refDir := t.TempDir()
	if out, err := exec.Command(bin, pebbleArgs(refDir, 0, "--rate", "0")...).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := output(t, filepath.Join(refDir, "out"))
	if len(want) < 100 {
		t.Fatalf("reference output has only %d lines", len(want))
	}
	// The backend must not change the results.
	heapDir := t.TempDir()
	if out, err := exec.Command(bin, args(heapDir, "--rate", "0")...).CombinedOutput(); err != nil {
		t.Fatalf("heap reference run: %v\n%s", err, out)
	}
	if heap := output(t, filepath.Join(heapDir, "out")); !slices.Equal(heap, want) {
		t.Fatalf("Pebble reference run: %d records, heap one %d; only with Pebble %q, only with heap %q",
			len(want), len(heap), first(Minus(want, heap), 5), first(Minus(heap, want), 5))
	}
	checkSharedArea(t, 0, filepath.Join(refDir, "ck"))

	rng := rand.New(rand.NewPCG(Seed(t), 3))
	total, failpoints, rounds, starts := 0, 0, 0, 0
	var sum useStats
	start := time.Now()
	deadline := start.Add(30 * time.Minute)
	for total < n {
		rounds++
		roundStart := time.Now()
		root := t.TempDir()
		ck := filepath.Join(root, "ck")
		budget := min(pebbleKillsPerRound, n-total)
		// Odd rounds at parallelism 2, even ones at 1 (the output is the
		// same). At 1 the restore opens the checkpoint's SST files as the
		// database and the next checkpoint lists them again; at 2 it
		// copies the key groups out of them (see
		// TestPebbleRestoreReusesSharedFiles, which checks the reuse
		// across a restart: here only the checkpoints retained when a
		// start ends are seen, so it is counted, not required).
		par := []string{"--parallelism", strconv.Itoa(2 - (rounds+1)%2)}
		if rounds%2 == 0 {
			// even rounds with the state changelog: checkpoints list a
			// base and log segments, a restore replays them
			par = append(par, "--changelog")
		}
		killed := 0
		seen := map[int64]use{}
		for a := 0; ; a++ {
			if time.Now().After(deadline) {
				t.Fatalf("out of time after %d kills", total)
			}
			starts++
			before := latestID(ck)
			extra := slices.Clone(par)
			// The moment of the kill (not a wait for a result).
			killAfter := time.Duration(40+rng.IntN(960)) * time.Millisecond
			if killed == budget {
				// The last start runs to completion (a bound, not a wait).
				killAfter = time.Until(deadline)
			} else if a%4 == 2 {
				// A failpoint: the process kills itself inside the protocol,
				// at one of the first checkpoints of this start.
				stage := []string{"state-file", "files-written", "complete"}[rng.IntN(3)]
				extra = append(extra, "--failpoint", stage, "--failpoint-checkpoint", strconv.FormatInt(before+1+rng.Int64N(4), 10))
			}
			sigkilled, ourKill, stderr, err := attempt(t, bin, pebbleArgs(root, a, extra...), killAfter)
			observe(t, ck, before, seen)
			if sigkilled {
				if killed == budget {
					t.Fatalf("round %d: start %d did not complete in time\n%s", rounds, a, stderr)
				}
				killed++
				total++
				if !ourKill {
					failpoints++ // it killed itself inside the checkpoint protocol
				}
				continue
			}
			if err != nil {
				t.Fatalf("round %d start %d failed: %v\n%s", rounds, a, err, stderr)
			}
			// The killed processes' working copies are gone, and the
			// completed one removed its own: what is left is its empty
			// proc-* directory with its LOCK.
			if left, err := os.ReadDir(stateDir(root, a)); err != nil || len(left) != 1 {
				t.Errorf("round %d: %d entries left in the state directory after %d kills, want 1 (%v)", rounds, len(left), killed, err)
			} else if in, err := os.ReadDir(filepath.Join(stateDir(root, a), left[0].Name())); err != nil || len(in) != 1 || in[0].Name() != "LOCK" {
				t.Errorf("round %d: the completed start left %v in %s, want only its LOCK (%v)", rounds, names(in), left[0].Name(), err)
			}
			break // completed
		}
		checkOutput(t, rounds, total, want, output(t, filepath.Join(root, "out")))
		retained := checkSharedArea(t, rounds, ck)
		var st useStats
		for _, u := range seen {
			st.add(u)
		}
		sum.checkpoints += st.checkpoints
		sum.reusing += st.reusing
		sum.acrossRestart += st.acrossRestart
		sum.logging += st.logging
		t.Logf("round %d (%v): %d kills, %v; %d checkpoints seen, %d reusing shared files (%d reusing files of an earlier start), %d listing log segments, %d retained",
			rounds, par, killed, time.Since(roundStart).Round(time.Millisecond), st.checkpoints, st.reusing, st.acrossRestart, st.logging, retained)
	}
	if rounds >= 2 && sum.logging == 0 {
		t.Fatalf("of %d checkpoints, none listed a state changelog segment: the changelog path was not exercised", sum.checkpoints)
	}
	if sum.reusing == 0 {
		t.Fatalf("of %d checkpoints, none listed a shared file that an earlier one uploaded: the incremental path was not exercised", sum.checkpoints)
	}
	t.Logf("%d kills (%d at failpoints) over %d rounds and %d starts in %v; each round's output equals the failure-free run's %d records; %d of %d checkpoints reused shared files (%d across a restart); no garbage in shared/",
		total, failpoints, rounds, starts, time.Since(start).Round(time.Millisecond), len(want), sum.reusing, sum.checkpoints, sum.acrossRestart)
}

// use says whether a checkpoint listed shared files that earlier
// checkpoints uploaded: of the same start of the job, or of an earlier one.
type use struct{ reuses, acrossRestart, logs bool }

type useStats struct{ checkpoints, reusing, acrossRestart, logging int }

func (s *useStats) add(u use) {
	s.checkpoints++
	if u.logs {
		s.logging++
	}
	if u.reuses {
		s.reusing++
	}
	if u.acrossRestart {
		s.acrossRestart++
	}
}

// retainedCheckpoints opens the complete checkpoints of the checkpoint
// directory dir, as `weir checkpoints inspect` does, oldest first. The
// directories it could not open, or that are not complete, are in bad, by
// path, with the reason.
func retainedCheckpoints(t *testing.T, dir string) (cks []*checkpoint.Checkpoint, bad map[string]error) {
	t.Helper()
	s, err := checkpoint.Open(dir, checkpoint.ReadOnly())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // killed before the job opened it
	} else if err != nil {
		t.Fatal(err)
	}
	infos, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	bad = map[string]error{}
	for _, info := range infos {
		switch {
		case info.InProgress:
			bad[info.Path] = errors.New("in progress")
		case !info.Complete:
			bad[info.Path] = errors.New("not complete")
		default:
			c, err := checkpoint.OpenPath(info.Path)
			if err != nil {
				bad[info.Path] = err
				continue
			}
			cks = append(cks, c)
		}
	}
	return cks, bad
}

// latestID is the id of the newest complete checkpoint in dir, 0 if none.
func latestID(dir string) int64 {
	s, err := checkpoint.Open(dir, checkpoint.ReadOnly())
	if err != nil {
		return 0
	}
	infos, _ := s.List()
	var id int64
	for _, info := range infos {
		if info.Complete {
			id = max(id, info.ID)
		}
	}
	return id
}

// observe records in seen, for each complete checkpoint in dir not seen
// yet, whether it reuses shared files; before is the newest checkpoint
// when the start that just ended began, so those of that start are the
// newer ones. It checks what the metadata says of each shared file: it was
// uploaded by that checkpoint or an earlier one.
func observe(t *testing.T, dir string, before int64, seen map[int64]use) {
	t.Helper()
	cks, _ := retainedCheckpoints(t, dir) // after a kill, some may be unusable; the restart copes
	for _, c := range cks {
		m := c.Metadata()
		if _, ok := seen[m.ID]; ok {
			continue
		}
		var u use
		for _, op := range m.Operators {
			for _, f := range op.Files {
				if !f.Shared {
					continue
				}
				if strings.Contains(f.Name, "/changelog-") {
					u.logs = true
				}
				switch {
				case f.UploadedIn < 1 || f.UploadedIn > m.ID:
					t.Errorf("%s: shared file %s uploaded in checkpoint %d", c.Path(), f.Name, f.UploadedIn)
				case f.UploadedIn < m.ID:
					u.reuses = true
					if m.ID > before && f.UploadedIn <= before {
						u.acrossRestart = true
					}
				}
			}
		}
		seen[m.ID] = u
	}
}

// checkSharedArea checks the checkpoint directory dir of a job that
// completed: every checkpoint in it is complete and verifies (contents
// included), and every file of its shared area is listed by one of them.
// It returns the number of checkpoints.
func checkSharedArea(t *testing.T, round int, dir string) int {
	t.Helper()
	cks, bad := retainedCheckpoints(t, dir)
	for path, err := range bad {
		t.Errorf("round %d: left in the checkpoint directory: %s: %v", round, path, err)
	}
	if len(cks) == 0 {
		t.Fatalf("round %d: no complete checkpoint in %s", round, dir)
	}
	listed := map[string]int64{}
	for _, c := range cks {
		if err := c.Verify(); err != nil {
			t.Errorf("round %d: retained checkpoint %s: %v", round, c.Path(), err)
		}
		for _, op := range c.Metadata().Operators {
			for _, f := range op.Files {
				if f.Shared {
					listed[f.Name] = c.ID()
				}
			}
		}
	}
	shared := filepath.Join(dir, checkpoint.SharedDirName)
	var garbage []string
	files := 0
	err := filepath.WalkDir(shared, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		rel, err := filepath.Rel(shared, path)
		if err != nil {
			return err
		}
		if _, ok := listed[filepath.ToSlash(rel)]; !ok {
			garbage = append(garbage, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if len(garbage) > 0 {
		ids := make([]int64, len(cks))
		for i, c := range cks {
			ids[i] = c.ID()
		}
		t.Errorf("round %d: %d of the %d files in %s are listed by none of the retained checkpoints %v: %q",
			round, len(garbage), files, shared, ids, first(garbage, 10))
	}
	return len(cks)
}

func names(es []os.DirEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
