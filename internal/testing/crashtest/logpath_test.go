package crashtest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	wlog "github.com/weirstream/weir/connector/log"
)

// buildWeir builds the weir command (or takes the one WEIR_CRASH_WEIR
// names).
func buildWeir(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("WEIR_CRASH_WEIR"); bin != "" {
		return bin
	}
	return Build(t, "../../../cmd/weir")
}

func demoArgs(root string, extra ...string) []string {
	return append([]string{"demo", "adclicks", "--quiet",
		"--data-dir", filepath.Join(root, "data"), "--checkpoint-dir", filepath.Join(root, "ck"),
		"--checkpoint-interval", "50ms", "--output", filepath.Join(root, "out"),
		"--events", "90000", "--rate", "15000", "--ads", "40", "--seed", "11", "--out-of-orderness", "2s",
	}, extra...)
}

func logKills() int { return Kills(20) }

// resultTopic reads topic click-counts: per partition, its records as
// "key value" lines, sorted (sink subtasks commit in either order).
func resultTopic(t *testing.T, dataDir string) [][]string {
	t.Helper()
	tp, err := wlog.OpenTopic(dataDir, "click-counts")
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]string, tp.Config.Partitions)
	for p := range out {
		r, err := tp.OpenReader(p, wlog.Earliest())
		if err != nil {
			t.Fatal(err)
		}
		for {
			recs, err := r.Read(context.Background(), 1000)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("click-counts partition %d: %v", p, err)
			}
			for _, rec := range recs {
				out[p] = append(out[p], fmt.Sprintf("%s %s", rec.Key, rec.Value))
			}
		}
		r.Close()
		slices.Sort(out[p])
	}
	return out
}

// TestKillDemoOnTheLog kills `weir demo adclicks` on its default path (a
// producer writes the clicks to a topic, the job reads it and writes the
// results to topic click-counts through the exactly-once log sink and to
// part files) with SIGKILL at random moments and at failpoints inside the
// checkpoint protocol, restarting it with the same flags until it
// completes. The results topic and the part files must then hold exactly
// what a run without failures commits: the same records, none twice.
func TestKillDemoOnTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	bin := buildWeir(t)
	refDir := t.TempDir()
	if out, err := exec.Command(bin, demoArgs(refDir, "--rate", "0")...).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	wantTopic := resultTopic(t, filepath.Join(refDir, "data"))
	wantFiles := output(t, filepath.Join(refDir, "out"))
	n := 0
	for p, recs := range wantTopic {
		if len(slices.Compact(slices.Clone(recs))) != len(recs) {
			t.Fatalf("reference run: duplicates in partition %d", p)
		}
		n += len(recs)
	}
	if n < 50 || n != len(wantFiles) {
		t.Fatalf("reference run: %d records in the topic, %d in part files", n, len(wantFiles))
	}

	rng := rand.New(rand.NewPCG(Seed(t), 2))
	want := logKills()
	total, failpoints, rounds := 0, 0, 0
	start := time.Now()
	deadline := start.Add(20 * time.Minute)
	for total < want {
		rounds++
		root := t.TempDir()
		pace := Pacer{Progress: func() int64 { return PartFiles(filepath.Join(root, "out")) }}
		for try := 0; ; try++ {
			if time.Now().After(deadline) {
				t.Fatalf("out of time after %d kills", total)
			}
			var extra []string
			if try%5 == 2 {
				stage := []string{"state-file", "files-written", "complete"}[rng.IntN(3)]
				extra = append(extra, "--failpoint", stage, "--failpoint-checkpoint", strconv.Itoa(1+rng.IntN(4)))
			}
			// The moment of the kill (not a wait for a result).
			killed, ourKill, stderr, err := attempt(t, bin, demoArgs(root, extra...), pace.Window(time.Duration(60+rng.IntN(400))*time.Millisecond))
			if killed {
				pace.Killed()
				total++
				if !ourKill {
					failpoints++
				}
				continue
			}
			if err != nil {
				t.Fatalf("round %d start %d failed: %v\n%s", rounds, try, err, stderr)
			}
			break
		}
		gotTopic := resultTopic(t, filepath.Join(root, "data"))
		for p := range wantTopic {
			if !slices.Equal(gotTopic[p], wantTopic[p]) {
				t.Fatalf("round %d, after %d kills: click-counts partition %d holds %d records, want %d; missing %q, unexpected %q",
					rounds, total, p, len(gotTopic[p]), len(wantTopic[p]), first(Minus(wantTopic[p], gotTopic[p]), 3), first(Minus(gotTopic[p], wantTopic[p]), 3))
			}
		}
		if got := output(t, filepath.Join(root, "out")); !slices.Equal(got, wantFiles) {
			t.Fatalf("round %d, after %d kills: %d part-file records, want %d; missing %q, unexpected %q",
				rounds, total, len(got), len(wantFiles), first(Minus(wantFiles, got), 3), first(Minus(got, wantFiles), 3))
		}
		// No staged output left for the sink either.
		if left, _ := filepath.Glob(filepath.Join(root, "data", "click-counts", ".txn", "*", "*.*")); len(left) != 0 {
			t.Fatalf("round %d: staging files left: %v", rounds, left)
		}
	}
	t.Logf("%d kills (%d at failpoints) over %d rounds in %v; each round's click-counts topic and part files equal the failure-free run's %d records",
		total, failpoints, rounds, time.Since(start).Round(time.Millisecond), n)
}
