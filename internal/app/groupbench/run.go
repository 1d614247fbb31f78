package groupbench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// VerboseEnv, set to anything, makes the workers log at info level to
// the benchmark's standard error (where the time goes).
const VerboseEnv = "WEIR_BENCH_VERBOSE"

// Config is one benchmark.
type Config struct {
	// Processes of the second run (the first has one).
	Processes int
	// Records in the input topic, over Partitions partitions.
	Records    int
	Partitions int
	// Runs of each kind (at least 1); the result is each kind's median.
	Runs int
	// CommitInterval is the workers' commit interval (0: group mode's
	// default, 100ms).
	CommitInterval time.Duration
	// Exe and WorkerArgs start one worker process: Exe WorkerArgs...
	// --brokers B --app-id ID --in T --out T.
	Exe        string
	WorkerArgs []string
	// Log, if set, gets progress lines.
	Log func(format string, args ...any)
}

// RunResult is one run of the job.
type RunResult struct {
	Processes int `json:"processes"`
	// Seconds is from the first record any process read to the end of
	// the last process (the headline: it leaves out starting the processes
	// and joining the group); RecordsPerSec is Records over it.
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	// WallSeconds is from starting the processes to the end of the last.
	WallSeconds       float64  `json:"wall_seconds"`
	WallRecordsPerSec float64  `json:"wall_records_per_sec"`
	Cores             []string `json:"cores"` // the core each process was pinned to ("" where none)
	Output            int64    `json:"output_records"`
	// WorkerCPUSeconds is the user and system CPU time of the workers,
	// BrokerCPUSeconds the bench process's (the kfake broker's, mostly)
	// during the run: what the run cost, whatever else the machine ran.
	WorkerCPUSeconds float64 `json:"worker_cpu_seconds"`
	BrokerCPUSeconds float64 `json:"broker_cpu_seconds"`
	// AllRecordsPerSec is every run's RecordsPerSec, in the order they
	// ran; the fields above are the median run's (by RecordsPerSec).
	AllRecordsPerSec []float64 `json:"all_records_per_sec"`
}

// Result is what `weir bench group` prints.
type Result struct {
	Job        string `json:"job"`
	Records    int    `json:"records"`
	Partitions int    `json:"partitions"`
	Runs       int    `json:"runs"`
	// CommitInterval is the workers' commit interval.
	CommitInterval string    `json:"commit_interval"`
	Pinning        string    `json:"pinning"`
	Broker         string    `json:"broker"`
	One            RunResult `json:"one_process"`
	Many           RunResult `json:"n_processes"`
	// Ratio is Many's records/s over One's (the target: ≥ 1.7
	// with two processes).
	Ratio      float64 `json:"ratio"`
	WallRatio  float64 `json:"wall_ratio"`
	LoadBefore string  `json:"loadavg_before"`
	LoadAfter  string  `json:"loadavg_after"`
	CPUs       int     `json:"cpus"`
}

// Run starts a kfake cluster on loopback, fills the input, and runs the
// job as one process and then as cfg.Processes processes, each reading
// the whole input to its end.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Processes < 1 || cfg.Records < 1 || cfg.Partitions < 1 {
		return nil, errors.New("groupbench: --processes, --records and --partitions must be at least 1")
	}
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	const in = "bench-in"
	if cfg.Runs < 1 {
		cfg.Runs = 1
	}
	outs := make([]string, 2*cfg.Runs)
	for k := range outs {
		outs[k] = fmt.Sprintf("bench-out-%d", k)
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(cfg.Partitions), in),
		kfake.SeedTopics(int32(cfg.Partitions), outs...))
	if err != nil {
		return nil, fmt.Errorf("groupbench: kfake: %w", err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	res := &Result{Job: JobName, Records: cfg.Records, Partitions: cfg.Partitions, Runs: cfg.Runs, CPUs: runtime.NumCPU(), CommitInterval: "100ms",
		Broker: fmt.Sprintf("kfake (1 broker, %s) in the bench process, not pinned: it shares the machine's cores with the workers, so every figure includes the broker's own work", strings.Join(brokers, ","))}
	if cfg.CommitInterval > 0 {
		res.CommitInterval = cfg.CommitInterval.String()
		cfg.WorkerArgs = append(append([]string(nil), cfg.WorkerArgs...), "--commit-interval", cfg.CommitInterval.String())
	}
	logf("filling %s: %d records over %d partitions", in, cfg.Records, cfg.Partitions)
	want, err := fill(ctx, brokers, in, cfg.Records, cfg.Partitions)
	if err != nil {
		return nil, err
	}
	cores := allowedCores()
	taskset, _ := exec.LookPath("taskset")
	switch {
	case taskset == "":
		res.Pinning = "GOMAXPROCS=1 per process; no taskset found, so the processes are not pinned to cores"
	default:
		res.Pinning = fmt.Sprintf("GOMAXPROCS=1 and taskset -c CORE per process (allowed cores %v)", cores)
	}
	res.LoadBefore = loadavg()
	var suffix [4]byte
	rand.Read(suffix[:])
	tag := hex.EncodeToString(suffix[:])
	// Runs alternate (1, N, 1, N, ...) so that a change in the machine's
	// load hits both; each run has its own app id and output topic.
	var ones, manys []*RunResult
	for k := 0; k < 2*cfg.Runs; k++ {
		procs := 1
		if k%2 == 1 {
			procs = cfg.Processes
		}
		out := fmt.Sprintf("bench-out-%d", k)
		appID := fmt.Sprintf("bench-run%d-%dp-%s", k+1, procs, tag)
		logf("run %d of %d: %d process(es), app id %s", k+1, 2*cfg.Runs, procs, appID)
		r, err := runOnce(ctx, cfg, brokers, appID, in, out, procs, taskset, cores)
		if err != nil {
			return nil, err
		}
		if r.Output, err = countCommitted(ctx, brokers, out); err != nil {
			return nil, err
		}
		if r.Output != want {
			return nil, fmt.Errorf("groupbench: run with %d process(es) wrote %d records to %s, want %d", procs, r.Output, out, want)
		}
		r.RecordsPerSec = float64(cfg.Records) / r.Seconds
		r.WallRecordsPerSec = float64(cfg.Records) / r.WallSeconds
		if procs == 1 && k%2 == 0 {
			ones = append(ones, r)
		} else {
			manys = append(manys, r)
		}
	}
	res.One, res.Many = median(ones), median(manys)
	res.LoadAfter = loadavg()
	res.Ratio = res.Many.RecordsPerSec / res.One.RecordsPerSec
	res.WallRatio = res.Many.WallRecordsPerSec / res.One.WallRecordsPerSec
	return res, nil
}

// runOnce starts procs workers of appID and waits for all to end: the
// time from the first start to the last end.
func runOnce(ctx context.Context, cfg Config, brokers []string, appID, in, out string, procs int, taskset string, cores []int) (*RunResult, error) {
	r := &RunResult{Processes: procs, Cores: make([]string, procs)}
	args := append(append([]string(nil), cfg.WorkerArgs...), "--brokers", strings.Join(brokers, ","), "--app-id", appID, "--in", in, "--out", out)
	cmds := make([]*exec.Cmd, procs)
	errs := make([]strings.Builder, procs)
	outs := make([]strings.Builder, procs)
	for i := range cmds {
		name, a := cfg.Exe, args
		if taskset != "" && len(cores) > 0 {
			core := strconv.Itoa(cores[i%len(cores)])
			r.Cores[i] = core
			name, a = taskset, append([]string{"-c", core, cfg.Exe}, args...)
		}
		c := exec.CommandContext(ctx, name, a...)
		c.Env = append(os.Environ(), "GOMAXPROCS=1", fmt.Sprintf("WEIR_INSTANCE_ID=%s-%d", appID, i))
		c.Stderr, c.Stdout = &errs[i], &outs[i]
		if os.Getenv(VerboseEnv) != "" {
			c.Stderr, c.Stdout = io.MultiWriter(&errs[i], os.Stderr), io.MultiWriter(&outs[i], os.Stderr)
		}
		cmds[i] = c
	}
	start, self := time.Now(), selfCPU()
	for i, c := range cmds {
		if err := c.Start(); err != nil {
			for _, s := range cmds[:i] {
				s.Process.Kill()
				s.Wait()
			}
			return nil, fmt.Errorf("groupbench: start worker: %w", err)
		}
	}
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Wait(); err != nil {
				e := fmt.Errorf("groupbench: worker %d of %s: %w\n%s", i, appID, err, errs[i].String())
				failed.CompareAndSwap(nil, &e)
			}
		}()
	}
	wg.Wait()
	end := time.Now()
	r.WallSeconds = end.Sub(start).Seconds()
	first := end
	for i := range outs {
		for _, line := range strings.Split(outs[i].String(), "\n") {
			if ns, ok := strings.CutPrefix(line, firstRecordLine+" "); ok {
				if n, err := strconv.ParseInt(ns, 10, 64); err == nil && time.Unix(0, n).Before(first) {
					first = time.Unix(0, n)
				}
			}
		}
	}
	r.Seconds = end.Sub(first).Seconds()
	r.BrokerCPUSeconds = (selfCPU() - self).Seconds()
	for _, c := range cmds {
		if c.ProcessState != nil {
			r.WorkerCPUSeconds += (c.ProcessState.UserTime() + c.ProcessState.SystemTime()).Seconds()
		}
	}
	if e := failed.Load(); e != nil {
		return nil, *e
	}
	return r, nil
}

// fill writes n records "key,ts,seq,amount" round robin over the
// partitions and returns how many the job keeps (amount not a multiple of
// 10).
func fill(ctx context.Context, brokers []string, topic string, n, parts int) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(1<<16))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var firstErr atomic.Pointer[error]
	var kept int64
	const base = int64(1_700_000_000_000)
	for i := 0; i < n; i++ {
		amount := int64(i*7919) % 1000
		if amount%10 != 0 {
			kept++
		}
		v := fmt.Appendf(nil, "k%d,%d,%d,%d", i%1000, base+int64(i/parts), i, amount)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if e := firstErr.Load(); e != nil {
		return 0, fmt.Errorf("groupbench: fill %s: %w", topic, *e)
	}
	return kept, nil
}

// countCommitted counts the committed records of topic (read committed,
// to the last stable offsets).
func countCommitted(ctx context.Context, brokers []string, topic string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	left := map[int32]int64{} // partition: the end still to reach
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	var n int64
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err := fs.Err0(); err != nil {
			return 0, fmt.Errorf("groupbench: read %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				n++
			}
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
	}
	return n, nil
}

// allowedCores lists the cores this process may run on (Linux's
// Cpus_allowed_list), or 0..NumCPU-1.
func allowedCores() []int {
	var out []int
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			list, ok := strings.CutPrefix(line, "Cpus_allowed_list:")
			if !ok {
				continue
			}
			for _, r := range strings.Split(strings.TrimSpace(list), ",") {
				lo, hi, found := strings.Cut(r, "-")
				a, err1 := strconv.Atoi(lo)
				b := a
				var err2 error
				if found {
					b, err2 = strconv.Atoi(hi)
				}
				if err1 != nil || err2 != nil {
					out = nil
					break
				}
				for c := a; c <= b; c++ {
					out = append(out, c)
				}
			}
		}
	}
	if len(out) == 0 {
		for c := 0; c < runtime.NumCPU(); c++ {
			out = append(out, c)
		}
	}
	return out
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// selfCPU is this process's user and system CPU time so far.
func selfCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// median is the run with the median records/s (the lower middle one of
// an even count), with every run's figure.
func median(rs []*RunResult) RunResult {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b *RunResult) int { return cmp.Compare(a.RecordsPerSec, b.RecordsPerSec) })
	m := *sorted[(len(sorted)-1)/2]
	m.AllRecordsPerSec = nil
	for _, r := range rs {
		m.AllRecordsPerSec = append(m.AllRecordsPerSec, math.Round(r.RecordsPerSec))
	}
	return m
}
