package groupbench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// workerEnv makes the test binary a worker process of Run (as
// `weir bench group --worker` is for the weir binary).
const workerEnv = "GROUPBENCH_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "" {
		os.Exit(m.Run())
	}
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	brokers := fs.String("brokers", "", "")
	appID := fs.String("app-id", "", "")
	in := fs.String("in", "", "")
	out := fs.String("out", "", "")
	commit := fs.Duration("commit-interval", 0, "")
	fs.Parse(os.Args[1:])
	if err := Worker(context.Background(), strings.Split(*brokers, ","), *appID, *in, *out, *commit, false); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestRun: the benchmark end to end on a small input, with real worker
// processes (this test binary): both runs write exactly the records the
// job keeps (Run checks it), and the figures are filled in.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Setenv(workerEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Processes: 2, Records: 3000, Partitions: 4, CommitInterval: 50 * time.Millisecond, Exe: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	if res.One.Processes != 1 || res.Many.Processes != 2 || res.One.Output != res.Many.Output || res.One.Output != 2700 {
		t.Fatalf("result: %+v", res)
	}
	for _, r := range []RunResult{res.One, res.Many} {
		if r.Seconds <= 0 || r.Seconds > r.WallSeconds || r.RecordsPerSec <= 0 || len(r.Cores) != r.Processes {
			t.Fatalf("run: %+v", r)
		}
	}
	if res.Ratio <= 0 || res.Job != JobName || res.CommitInterval != "50ms" {
		t.Fatalf("result: %+v", res)
	}
	t.Logf("%+v", res)
}

// TestParse: good records parse; bad ones get an error naming the
// topic, partition and offset.
func TestParse(t *testing.T) {
	e, err := Parse(&kgo.Record{Value: []byte("k7,1700000000000,42,315")})
	if err != nil || string(e.Key) != "k7" || e.TS != 1_700_000_000_000 || e.Seq != 42 || e.Amount != 315 {
		t.Fatalf("Parse: %+v, %v", e, err)
	}
	for _, bad := range []string{"", "k,1,2", "k,1,2,3,4", "k,1,x,3", "k,1,2,", "k,-1,2,3"} {
		_, err := Parse(&kgo.Record{Topic: "in", Partition: 3, Offset: 99, Value: []byte(bad)})
		if err == nil || !strings.Contains(err.Error(), `topic "in" partition 3 offset 99`) {
			t.Errorf("Parse(%q): %v, want an error naming where", bad, err)
		}
	}
}
