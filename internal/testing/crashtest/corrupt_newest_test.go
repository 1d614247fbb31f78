package crashtest

import (
	"github.com/weirstream/weir/internal/testing/weirtest"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// newestCheckpoint returns the directory of the newest complete checkpoint
// in ck (by id), or "".
func newestCheckpoint(t *testing.T, ck string) string {
	t.Helper()
	s, err := checkpoint.Open(ck, checkpoint.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	infos, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	for i := len(infos) - 1; i >= 0; i-- {
		if in := infos[i]; in.Complete && in.Kind == checkpoint.KindCheckpoint {
			return in.Path
		}
	}
	return ""
}

// flipByte flips one bit of one byte of file at a random offset (a bad
// sector), and returns the offset.
func flipByte(t *testing.T, rng *rand.Rand, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil || len(b) == 0 {
		t.Fatalf("%s: %d bytes, %v", file, len(b), err)
	}
	off := rng.IntN(len(b))
	b[off] ^= 1 << rng.IntN(8)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return off
}

// demoOutput is what a run of the demo committed: the part files' lines and
// the click-counts topic's records (each sorted).
type demoOutput struct {
	files []string
	topic [][]string
}

func readDemoOutput(t *testing.T, root string) demoOutput {
	t.Helper()
	return demoOutput{files: output(t, filepath.Join(root, "out")), topic: resultTopic(t, filepath.Join(root, "data"))}
}

// committedOutput is readDemoOutput of a demo that did not end (killed,
// or refused to start): hidden files (staged output) may be left.
func committedOutput(t *testing.T, root string) demoOutput {
	t.Helper()
	dir := filepath.Join(root, "out")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "part-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	slices.Sort(lines)
	return demoOutput{files: lines, topic: resultTopic(t, filepath.Join(root, "data"))}
}

// extra returns what got holds that want does not (as multisets): the
// records committed twice, or that no failure-free run commits.
func (got demoOutput) extra(want demoOutput) (files []string, topic []string) {
	files = Minus(got.files, want.files)
	for p := range got.topic {
		topic = append(topic, Minus(got.topic[p], want.topic[p])...)
	}
	return files, topic
}

func (got demoOutput) equal(want demoOutput) bool {
	if !slices.Equal(got.files, want.files) || len(got.topic) != len(want.topic) {
		return false
	}
	for p := range got.topic {
		if !slices.Equal(got.topic[p], want.topic[p]) {
			return false
		}
	}
	return true
}

// TestCorruptNewestCheckpointOfKilledDemo: `weir demo adclicks` (the log
// source, the exactly-once log sink and the exactly-once file sink with
// --output) is killed with SIGKILL, one byte of its newest checkpoint is
// flipped, and it is started again with the same flags. It must then
// either complete with output identical to a failure-free run (part files
// and results topic), or refuse to start with an error naming the newest
// checkpoint, having committed nothing twice. Cases:
//
//   - killed right after the sinks committed the output of checkpoint K, a byte of
//     _metadata flipped: the copy repairs it; the output is identical;
//   - the same with a byte of a state file flipped: restoring K-1 would
//     commit K's output again; the demo refuses, naming chk-K; started once
//     more with --allow-duplicates it completes, and the duplicates it then
//     commits are counted (the measurement);
//   - killed at random moments, a random byte of a random file of the
//     newest checkpoint flipped: one of the two outcomes.
func TestCorruptNewestCheckpointOfKilledDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	bin := buildWeir(t)
	refDir := t.TempDir()
	if out, err := exec.Command(bin, demoArgs(refDir, "--rate", "0")...).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := readDemoOutput(t, refDir)
	if len(want.files) < 100 {
		t.Fatalf("reference run: %d lines", len(want.files))
	}
	rng := rand.New(rand.NewPCG(Seed(t), 4))

	// killAtCommit runs the demo in root and kills it with SIGKILL as soon
	// as its sinks committed part files of a checkpoint after the second
	// (a condition polled with a deadline; windows fire every few seconds,
	// so most checkpoints commit nothing). The checkpoint after it is 50ms
	// away, so the newest checkpoint is almost always the one that
	// committed; if not, it tries again in a fresh directory. It returns
	// the root and the newest checkpoint, whose output the sinks committed.
	killAtCommit := func(t *testing.T) (root, newest string) {
		t.Helper()
		for try := 0; try < 5; try++ {
			root = t.TempDir()
			cmd := exec.Command(bin, demoArgs(root)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if !weirtest.Poll(2*time.Minute, func() bool { return committedAfter(filepath.Join(root, "out"), 2) }) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no output committed within 2 minutes:\n%s", stderr.String())
			}
			cmd.Process.Signal(syscall.SIGKILL)
			if err := cmd.Wait(); err == nil {
				continue // it ended first
			}
			newest = newestCheckpoint(t, filepath.Join(root, "ck"))
			id := strings.TrimPrefix(filepath.Base(newest), "chk-")
			if m, _ := filepath.Glob(filepath.Join(root, "out", "part-"+id+"-*")); len(m) > 0 {
				return root, newest
			}
		}
		t.Fatal("5 tries: the newest checkpoint never was the one that committed output")
		return "", ""
	}
	// restart runs the demo to its end (no kill), with extra flags.
	restart := func(t *testing.T, root string, extra ...string) (string, error) {
		t.Helper()
		_, _, stderr, err := attempt(t, bin, demoArgs(root, extra...), 0)
		return stderr, err
	}

	t.Run("metadata", func(t *testing.T) {
		root, newest := killAtCommit(t)
		flipByte(t, rng, filepath.Join(newest, "_metadata"))
		if stderr, err := restart(t, root); err != nil {
			t.Fatalf("restart after a flipped byte in %s/_metadata: %v\n%s", newest, err, stderr)
		}
		if got := readDemoOutput(t, root); !got.equal(want) {
			f, tp := got.extra(want)
			t.Fatalf("output differs from a failure-free run: %d part-file lines (want %d), %d extra; %d extra topic records", len(got.files), len(want.files), len(f), len(tp))
		}
	})

	t.Run("state file", func(t *testing.T) {
		root, newest := killAtCommit(t)
		states, _ := filepath.Glob(filepath.Join(newest, "*.state"))
		if len(states) == 0 {
			t.Fatalf("no state files in %s", newest)
		}
		flipByte(t, rng, states[rng.IntN(len(states))])
		before := committedOutput(t, root)
		stderr, err := restart(t, root)
		if err == nil {
			t.Fatal("the demo restored behind committed output instead of refusing")
		}
		for _, s := range []string{"refusing", newest, "--allow-duplicates", "savepoint"} {
			if !strings.Contains(stderr, s) {
				t.Fatalf("the error does not name %q:\n%s", s, stderr)
			}
		}
		got := committedOutput(t, root)
		if f, tp := got.extra(want); len(f)+len(tp) > 0 || !got.equal(before) {
			t.Fatalf("the refused start committed output: %d extra part-file lines, %d extra topic records", len(f), len(tp))
		}
		// The other choice the error offers is a flag the demo has.
		if help, _ := exec.Command(bin, "demo", "adclicks", "--help").Output(); !strings.Contains(string(help), "--restore-from") {
			t.Fatalf("the refusal offers --restore-from, which the demo does not have:\n%s", help)
		}
		// Accepting duplicates, as the error offers; the summary says the
		// output is no longer exactly once.
		cmd := exec.Command(bin, demoArgs(root, "--allow-duplicates")...)
		var errBuf strings.Builder
		cmd.Stderr = &errBuf
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("--allow-duplicates: %v\n%s", err, errBuf.String())
		}
		if strings.Contains(string(stdout), "(exactly once)") || !strings.Contains(string(stdout), "at least once") {
			t.Fatalf("after committing output a second time the summary says:\n%s", stdout)
		}
		got = readDemoOutput(t, root)
		f, tp := got.extra(want)
		if missing, _ := want.extra(got); len(missing) > 0 || len(f) == 0 {
			t.Fatalf("with --allow-duplicates: %d lines missing, %d duplicated (want none missing, some duplicated)", len(missing), len(f))
		}
		t.Logf("with --allow-duplicates the fallback past %s committed %d of %d part-file lines and %d topic records twice", filepath.Base(newest), len(f), len(want.files), len(tp))
	})

	t.Run("random kills", func(t *testing.T) {
		n := Kills(4)
		identical, refused := 0, 0
		for i := 0; i < n; i++ {
			root := t.TempDir()
			var newest string
			for newest == "" {
				// The moment of the kill (not a wait for a result); early
				// kills may leave no checkpoint, then it runs again.
				killed, _, stderr, err := attempt(t, bin, demoArgs(root), time.Duration(300+rng.IntN(2500))*time.Millisecond)
				if !killed {
					if err != nil {
						t.Fatalf("run %d: %v\n%s", i, err, stderr)
					}
					root = t.TempDir() // it ended before the kill: again
					continue
				}
				newest = newestCheckpoint(t, filepath.Join(root, "ck"))
			}
			files, _ := os.ReadDir(newest)
			file := filepath.Join(newest, files[rng.IntN(len(files))].Name())
			off := flipByte(t, rng, file)
			stderr, err := restart(t, root)
			got := committedOutput(t, root)
			if err == nil {
				got = readDemoOutput(t, root) // and no hidden file is left
			}
			switch {
			case err == nil && got.equal(want):
				identical++
			case err == nil:
				f, tp := got.extra(want)
				t.Fatalf("run %d (byte %d of %s flipped): the output differs from a failure-free run: %d part-file lines (want %d), %d extra; %d extra topic records",
					i, off, file, len(got.files), len(want.files), len(f), len(tp))
			case strings.Contains(stderr, newest) && strings.Contains(stderr, "--allow-duplicates"):
				if f, tp := got.extra(want); len(f)+len(tp) > 0 {
					t.Fatalf("run %d: refused, but %d part-file lines and %d topic records were committed twice", i, len(f), len(tp))
				}
				refused++
			default:
				t.Fatalf("run %d (byte %d of %s flipped): %v\n%s", i, off, file, err, stderr)
			}
		}
		t.Logf("%d kills with a flipped byte in the newest checkpoint: %d restarts gave output identical to a failure-free run, %d refused to start naming the checkpoint (nothing committed twice)", n, identical, refused)
	})
}

// committedAfter reports whether dir holds a committed part file of a
// checkpoint after id.
func committedAfter(dir string, id int64) bool {
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		rest, ok := strings.CutPrefix(e.Name(), "part-")
		if !ok {
			continue
		}
		ck, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.ParseInt(ck, 10, 64); err == nil && n > id {
			return true
		}
	}
	return false
}
