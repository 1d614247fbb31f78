package cli

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/broker"
	wlog "github.com/weirstream/weir/connector/log"
)

// kgoBatchMaxBytes is franz-go's default ProducerBatchMaxBytes (Kafka's
// max.message.bytes): the most one produced batch holds, before
// compression.
const kgoBatchMaxBytes = 1_000_012

// brokerBenchStall is how long a phase may go without progress before the
// benchmark gives up (a broken broker, not a slow one).
const brokerBenchStall = 60 * time.Second

// brokerBenchResult is `weir bench broker --json`.
type brokerBenchResult struct {
	Records     int    `json:"records"`
	RecordBytes int    `json:"record_bytes"`
	Partitions  int    `json:"partitions"`
	Sync        string `json:"sync"`
	// BatchRecords is the records per Append of the direct append.
	BatchRecords int `json:"batch_records"`

	DirectAppendRPS  float64 `json:"direct_append_rps"`
	DirectAppendMBps float64 `json:"direct_append_mb_per_sec"`
	DirectReadRPS    float64 `json:"direct_read_rps"`
	DirectReadMBps   float64 `json:"direct_read_mb_per_sec"`

	BrokerProduceRPS  float64 `json:"broker_produce_rps"`
	BrokerProduceMBps float64 `json:"broker_produce_mb_per_sec"`
	BrokerConsumeRPS  float64 `json:"broker_consume_rps"`
	BrokerConsumeMBps float64 `json:"broker_consume_mb_per_sec"`
	ProduceRatio      float64 `json:"produce_ratio"`
	ConsumeRatio      float64 `json:"consume_ratio"`
	// What the franz-go producer sent: produce requests, batches, and the
	// mean records per batch and batches per request.
	ProduceRequests        int     `json:"produce_requests"`
	ProduceBatches         int     `json:"produce_batches"`
	ProduceBatchRecords    float64 `json:"produce_batch_records"`
	ProduceRequestBatches  float64 `json:"produce_request_batches"`
	ProduceCompressedBatch int     `json:"produce_compressed_batches"`

	LatencyRate     int     `json:"latency_rate"`
	LatencySeconds  float64 `json:"latency_seconds"`
	LatencyLinger   string  `json:"latency_linger"`
	LatencyRecords  int     `json:"latency_records"`
	LatencySentRate float64 `json:"latency_sent_rps"`
	P50LatencyMs    float64 `json:"p50_latency_ms"`
	P99LatencyMs    float64 `json:"p99_latency_ms"`
	MaxLatencyMs    float64 `json:"max_latency_ms"`

	// The process's CPU seconds (user and system, broker and client
	// alike) in each throughput phase, the machine's CPUs and its load:
	// a phase whose CPU is far below its wall time on a loaded machine
	// waited for a core.
	DirectAppendCPU  float64 `json:"direct_append_cpu_sec"`
	DirectReadCPU    float64 `json:"direct_read_cpu_sec"`
	BrokerProduceCPU float64 `json:"broker_produce_cpu_sec"`
	BrokerConsumeCPU float64 `json:"broker_consume_cpu_sec"`
	CPUs             int     `json:"cpus"`
	LoadBefore       string  `json:"loadavg_before"`
	LoadAfter        string  `json:"loadavg_after"`
}

type brokerBenchConfig struct {
	dir                         string
	records, size, parts, batch int
	latRate                     int
	latSeconds                  float64
	latLinger                   time.Duration
	cpuProfile                  string
	stderr                      io.Writer
	consumers, producers        int
}

// newBenchBroker is `weir bench broker`: the Kafka-protocol broker against
// the embedded log it serves, on the same disk.
func newBenchBroker() *cobra.Command {
	var (
		c      brokerBenchConfig
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Produce and consume rates through the Kafka-protocol broker against the embedded log's own, and produce-to-consume latency",
		Long: `Runs, in one temporary data directory (so on one disk):

 1. direct append: one wlog writer per partition (fsync per batch, the
    broker's default), each in its own goroutine, appending batches of
    --batch records (default: as many as fit in franz-go's default batch,
    ProducerBatchMaxBytes 1,000,012 B);
 2. direct read: one wlog reader per partition, from the start to the end;
 3. broker produce: the broker in this process, a franz-go client with its
    defaults (acks=all, idempotent, linger 10ms, snappy where it helps)
    producing the same records asynchronously to a second topic;
 4. broker consume: a franz-go consumer reading that topic from the start
    to the end;
 5. latency: a franz-go producer (linger --latency-linger) sending records
    stamped with their send time at --latency-rate for --latency-seconds
    while a consumer follows a third topic; p50 and p99 from the send to
    the consumer's poll returning the record.

The issue's targets: (3) at least 0.5x (1) and (4) at least 0.5x (2). The
client runs in this process too: the broker's figures include its CPU.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.records < 1 || c.parts < 1 || c.latRate < 1 || c.latSeconds <= 0 {
				return errors.New("bench broker: --records, --partitions, --latency-rate and --latency-seconds must be positive")
			}
			if c.size < 8 {
				return errors.New("bench broker: --record-bytes must be at least 8 (the latency run stamps the send time in the value)")
			}
			if c.batch == 0 {
				c.batch = kgoBatchRecords(c.size)
			}
			c.stderr = cmd.ErrOrStderr()
			res, err := benchBroker(cmd.Context(), c)
			if err != nil {
				return err
			}
			o := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(o).Encode(res)
			}
			fmt.Fprintf(o, "workload:       %d records of %d B over %d partitions; %s\n", res.Records, res.RecordBytes, res.Partitions, res.Sync)
			fmt.Fprintf(o, "direct append:  %9.0f records/s (%6.1f MB/s, %5.2f s, CPU %5.2f s)  one writer goroutine per partition, %d records per Append\n",
				res.DirectAppendRPS, res.DirectAppendMBps, secs(res.Records, res.DirectAppendRPS), res.DirectAppendCPU, res.BatchRecords)
			fmt.Fprintf(o, "direct read:    %9.0f records/s (%6.1f MB/s, %5.2f s, CPU %5.2f s)  one reader goroutine per partition\n",
				res.DirectReadRPS, res.DirectReadMBps, secs(res.Records, res.DirectReadRPS), res.DirectReadCPU)
			fmt.Fprintf(o, "broker produce: %9.0f records/s (%6.1f MB/s, %5.2f s, CPU %5.2f s)  %.2fx direct append (target >= 0.50x); franz-go defaults: %d requests of %.1f batches of %.0f records (%d compressed)\n",
				res.BrokerProduceRPS, res.BrokerProduceMBps, secs(res.Records, res.BrokerProduceRPS), res.BrokerProduceCPU, res.ProduceRatio,
				res.ProduceRequests, res.ProduceRequestBatches, res.ProduceBatchRecords, res.ProduceCompressedBatch)
			fmt.Fprintf(o, "broker consume: %9.0f records/s (%6.1f MB/s, %5.2f s, CPU %5.2f s)  %.2fx direct read (target >= 0.50x)\n",
				res.BrokerConsumeRPS, res.BrokerConsumeMBps, secs(res.Records, res.BrokerConsumeRPS), res.BrokerConsumeCPU, res.ConsumeRatio)
			fmt.Fprintf(o, "latency:        p50 %.2f ms, p99 %.2f ms, max %.2f ms  produce to consume, %d records at %d/s (sent %.0f/s) for %.1f s, producer linger %s\n",
				res.P50LatencyMs, res.P99LatencyMs, res.MaxLatencyMs, res.LatencyRecords, res.LatencyRate, res.LatencySentRate, res.LatencySeconds, res.LatencyLinger)
			fmt.Fprintf(o, "load:           %s before, %s after (1/5/15 min; %d CPUs; CPU is the whole process's, broker and client)\n", res.LoadBefore, res.LoadAfter, res.CPUs)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.dir, "data-dir", "", "directory in which to make the benchmark's data directory, removed afterwards: the disk measured (default: the system's temporary directory)")
	f.IntVar(&c.records, "records", 200_000, "records to append, read, produce and consume")
	f.IntVar(&c.size, "record-bytes", 1024, "value size of each record")
	f.IntVar(&c.parts, "partitions", 8, "partitions of each topic")
	f.IntVar(&c.producers, "producers", 1, "franz-go clients producing at once, each writing every n-th partition (more than 1: records name their partition); the direct append has one writer per partition")
	f.IntVar(&c.consumers, "consumers", 1, "franz-go clients consuming at once, each assigned every n-th partition (a Kafka application scales its consumers so); the direct read has one reader per partition")
	f.IntVar(&c.batch, "batch", 0, "records per Append of the direct append (default: as many as fit in franz-go's default batch of 1,000,012 B)")
	f.IntVar(&c.latRate, "latency-rate", 2000, "records per second of the latency run")
	f.Float64Var(&c.latSeconds, "latency-seconds", 5, "seconds the latency run sends for")
	f.DurationVar(&c.latLinger, "latency-linger", 0, "the latency producer's linger (franz-go's default is 10ms)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the broker produce and consume phases to this file")
	f.MarkHidden("cpuprofile")
	return cmd
}

// secs is the seconds n records took at rps records/s.
func secs(n int, rps float64) float64 {
	if rps <= 0 {
		return 0
	}
	return float64(n) / rps
}

// kgoBatchRecords is how many records of size bytes (no key, no headers)
// fit in one franz-go batch of the default ProducerBatchMaxBytes.
func kgoBatchRecords(size int) int {
	const batchHeader = 61
	body := 1 + 1 + 2 + 1 + varintLen(size) + size + 1 // attributes, timestamp delta, offset delta, key -1, value, no headers
	n := (kgoBatchMaxBytes - batchHeader) / (varintLen(body) + body)
	return max(n, 1)
}

func varintLen(v int) int {
	return len(binary.AppendVarint(nil, int64(v)))
}

func benchBroker(ctx context.Context, c brokerBenchConfig) (brokerBenchResult, error) {
	res := brokerBenchResult{Records: c.records, RecordBytes: c.size, Partitions: c.parts, BatchRecords: c.batch,
		Sync:        "fsync per batch (wlog.SyncEveryBatch, the broker's default)",
		LatencyRate: c.latRate, LatencySeconds: c.latSeconds, LatencyLinger: c.latLinger.String()}
	dir, err := os.MkdirTemp(c.dir, "weir-bench-broker-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	values := benchValues(c.size, c.records)
	const direct, produced, latency = "bench-direct", "bench-broker", "bench-latency"
	topics := map[string]*wlog.Topic{}
	for _, name := range []string{direct, produced, latency} {
		t, err := wlog.CreateTopic(dir, name, wlog.TopicConfig{Partitions: c.parts})
		if err != nil {
			return res, err
		}
		topics[name] = t
	}
	mb := float64(c.records*c.size) / 1e6
	res.CPUs, res.LoadBefore = runtime.NumCPU(), loadavg()

	// 1. Direct append.
	cpu := selfCPU()
	el, err := directAppend(topics[direct], c, values)
	if err != nil {
		return res, fmt.Errorf("bench broker: direct append: %w", err)
	}
	res.DirectAppendRPS, res.DirectAppendMBps, res.DirectAppendCPU = float64(c.records)/el, mb/el, selfCPU()-cpu
	// 2. Direct read.
	cpu = selfCPU()
	if el, err = directRead(ctx, topics[direct], c); err != nil {
		return res, fmt.Errorf("bench broker: direct read: %w", err)
	}
	res.DirectReadRPS, res.DirectReadMBps, res.DirectReadCPU = float64(c.records)/el, mb/el, selfCPU()-cpu

	// The broker, in this process, over the same directory.
	b, err := broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0", InitialRebalanceDelay: -1,
		Logger: slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		return res, err
	}
	defer b.Close()
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return res, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return res, err
		}
		defer pprof.StopCPUProfile() // on an error; stopping twice is harmless
	}
	// 3. Broker produce.
	cpu = selfCPU()
	ps, err := brokerProduce(ctx, b.Addr(), produced, c, values)
	if err != nil {
		return res, fmt.Errorf("bench broker: produce: %w", err)
	}
	res.BrokerProduceRPS, res.BrokerProduceMBps, res.BrokerProduceCPU = float64(c.records)/ps.seconds, mb/ps.seconds, selfCPU()-cpu
	res.ProduceRatio = res.BrokerProduceRPS / res.DirectAppendRPS
	res.ProduceRequests, res.ProduceBatches, res.ProduceCompressedBatch = ps.requests, ps.batches, ps.compressed
	if ps.batches > 0 {
		res.ProduceBatchRecords = float64(c.records) / float64(ps.batches)
	}
	if ps.requests > 0 {
		res.ProduceRequestBatches = float64(ps.batches) / float64(ps.requests)
	}
	// 4. Broker consume.
	cpu = selfCPU()
	if el, err = brokerConsume(ctx, b.Addr(), produced, c.records, c.consumers, c.parts); err != nil {
		return res, fmt.Errorf("bench broker: consume: %w", err)
	}
	res.BrokerConsumeRPS, res.BrokerConsumeMBps, res.BrokerConsumeCPU = float64(c.records)/el, mb/el, selfCPU()-cpu
	res.ConsumeRatio = res.BrokerConsumeRPS / res.DirectReadRPS
	if c.cpuProfile != "" {
		pprof.StopCPUProfile()
		fmt.Fprintf(c.stderr, "bench broker: CPU profile of the broker produce and consume phases (broker and client, one process) in %s\n", c.cpuProfile)
	}
	// 5. Latency.
	lat, sent, err := brokerLatency(ctx, b.Addr(), latency, c, values)
	if err != nil {
		return res, fmt.Errorf("bench broker: latency: %w", err)
	}
	res.LatencyRecords, res.LatencySentRate = len(lat), sent
	res.P50LatencyMs, res.P99LatencyMs, res.MaxLatencyMs = percentileMs(lat, 0.50), percentileMs(lat, 0.99), percentileMs(lat, 1)
	res.LoadAfter = loadavg()
	return res, b.Close()
}

// selfCPU is this process's user and system CPU seconds so far.
func selfCPU() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return float64(u.Utime.Nano()+u.Stime.Nano()) / 1e9
}

// loadavg is the 1, 5 and 15 minute load averages, or "unknown".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// benchValues returns distinct incompressible values of size bytes, used
// in turn by every phase: compression would flatter the broker, and so
// would a value repeated within one produced batch (franz-go tries
// snappy on each). 32 MB of them span several batches of every partition.
func benchValues(size, records int) [][]byte {
	rng := rand.New(rand.NewChaCha8([32]byte{'w', 'e', 'i', 'r'}))
	vs := make([][]byte, max(1, min(records, (32<<20)/size)))
	for i := range vs {
		vs[i] = make([]byte, size)
		for j := range vs[i] {
			vs[i][j] = byte(rng.Uint32())
		}
	}
	return vs
}

// share is partition p's part of n records over parts partitions.
func share(n, parts, p int) int {
	s := n / parts
	if p < n%parts {
		s++
	}
	return s
}

func directAppend(t *wlog.Topic, c brokerBenchConfig, values [][]byte) (float64, error) {
	ws := make([]*wlog.Writer, c.parts)
	defer func() {
		for _, w := range ws {
			if w != nil {
				w.Close()
			}
		}
	}()
	for p := range ws {
		w, err := t.OpenWriter(p, wlog.WithSync(wlog.SyncEveryBatch()))
		if err != nil {
			return 0, err
		}
		ws[p] = w
	}
	errs := make([]error, c.parts)
	var wg sync.WaitGroup
	start := time.Now()
	for p, w := range ws {
		wg.Go(func() {
			n := share(c.records, c.parts, p)
			recs := make([]wlog.Record, c.batch)
			for done := 0; done < n; {
				k := min(c.batch, n-done)
				for i := range recs[:k] {
					recs[i] = wlog.Record{Value: values[(done+i)%len(values)]}
				}
				if _, err := w.Append(recs[:k]); err != nil {
					errs[p] = err
					return
				}
				done += k
			}
		})
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	for p, w := range ws {
		ws[p] = nil
		if err := w.Close(); err != nil {
			return 0, err
		}
	}
	return el, nil
}

func directRead(ctx context.Context, t *wlog.Topic, c brokerBenchConfig) (float64, error) {
	rs := make([]*wlog.Reader, c.parts)
	defer func() {
		for _, r := range rs {
			if r != nil {
				r.Close()
			}
		}
	}()
	for p := range rs {
		r, err := t.OpenReader(p, wlog.Earliest())
		if err != nil {
			return 0, err
		}
		rs[p] = r
	}
	errs := make([]error, c.parts)
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for p, r := range rs {
		wg.Go(func() {
			got := 0
			for {
				recs, err := r.Read(ctx, c.batch)
				for i := range recs {
					got += len(recs[i].Value)
				}
				total.Add(int64(len(recs)))
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					errs[p] = err
					return
				}
			}
			if want := share(c.records, c.parts, p) * c.size; got != want {
				errs[p] = fmt.Errorf("partition %d: read %d bytes of values, appended %d", p, got, want)
			}
		})
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if n := total.Load(); n != int64(c.records) {
		return 0, fmt.Errorf("read %d records, appended %d", n, c.records)
	}
	return el, nil
}

// produceStats counts what a franz-go producer sent (kgo hooks).
type produceStats struct {
	requests, batches, compressed atomic.Int64
}

func (s *produceStats) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 0 && err == nil {
		s.requests.Add(1)
	}
}

func (s *produceStats) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	s.batches.Add(1)
	if m.CompressionType != 0 {
		s.compressed.Add(1)
	}
}

type produceResult struct {
	seconds                       float64
	requests, batches, compressed int
}

func brokerProduce(ctx context.Context, addr, topic string, c brokerBenchConfig, values [][]byte) (produceResult, error) {
	var res produceResult
	stats := &produceStats{}
	n := max(c.producers, 1)
	clients := make([]*kgo.Client, n)
	for i := range clients {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.WithHooks(stats)}
		if n > 1 {
			// client i writes partitions i, i+n, ... (records name theirs)
			opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return res, err
		}
		defer cl.Close()
		if err := pingBroker(ctx, cl); err != nil {
			return res, err
		}
		clients[i] = cl
	}
	var tally produceTally
	cb := tally.done
	start := time.Now()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// client i's share: every n-th record, spread over its partitions
			var mine []int32
			for p := i; p < c.parts; p += n {
				mine = append(mine, int32(p))
			}
			for k, j := i, 0; k < c.records; k, j = k+n, j+1 {
				r := &kgo.Record{Topic: topic, Value: values[k%len(values)]}
				if n > 1 {
					r.Partition = mine[j%len(mine)]
				}
				cl.Produce(ctx, r, cb)
			}
			errs[i] = flushWatched(ctx, cl, &tally.acked)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	res.seconds = time.Since(start).Seconds()
	if p := tally.firstErr.Load(); p != nil {
		return res, *p
	}
	if got := tally.acked.Load(); got != int64(c.records) {
		return res, fmt.Errorf("%d records acknowledged of %d", got, c.records)
	}
	res.requests, res.batches, res.compressed = int(stats.requests.Load()), int(stats.batches.Load()), int(stats.compressed.Load())
	return res, nil
}

// pingBroker connects cl, giving up after brokerBenchStall.
func pingBroker(ctx context.Context, cl *kgo.Client) error {
	pctx, cancel := context.WithTimeout(ctx, brokerBenchStall)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		return fmt.Errorf("connect to the broker: %w", err)
	}
	return nil
}

// flushWatched flushes cl, giving up when no record is acknowledged for
// brokerBenchStall (franz-go retries a failing produce for ever).
// produceTally counts a producer's acknowledged records and keeps its
// first error (its done is the records' promise).
type produceTally struct {
	firstErr atomic.Pointer[error]
	acked    atomic.Int64
}

func (t *produceTally) done(_ *kgo.Record, err error) {
	if err != nil {
		t.firstErr.CompareAndSwap(nil, &err)
		return
	}
	t.acked.Add(1)
}

func flushWatched(ctx context.Context, cl *kgo.Client, acked *atomic.Int64) error {
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		last, at := acked.Load(), time.Now()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if n := acked.Load(); n != last {
					last, at = n, time.Now()
				} else if time.Since(at) > brokerBenchStall {
					cancel(fmt.Errorf("no record acknowledged for %s (%d so far)", brokerBenchStall, n))
					return
				}
			}
		}
	}()
	if err := cl.Flush(fctx); err != nil {
		if cause := context.Cause(fctx); cause != nil {
			return cause
		}
		return err
	}
	return nil
}

// pollWatched polls cl, failing when nothing arrives for brokerBenchStall.
func pollWatched(ctx context.Context, cl *kgo.Client) (kgo.Fetches, error) {
	pctx, cancel := context.WithTimeout(ctx, brokerBenchStall)
	defer cancel()
	fs := cl.PollFetches(pctx)
	if pctx.Err() != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("no record for %s", brokerBenchStall)
	}
	if err := fs.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	var err error
	fs.EachError(func(t string, p int32, e error) {
		if err == nil {
			err = fmt.Errorf("fetch %s/%d: %w", t, p, e)
		}
	})
	return fs, err
}

func newBenchConsumer(addr, topic string) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()))
}

func brokerConsume(ctx context.Context, addr, topic string, n, clients, parts int) (float64, error) {
	start := time.Now()
	var total atomic.Int64
	errs := make([]error, clients)
	// the clients stop together once every record arrived
	ctx, done := context.WithCancel(ctx)
	defer done()
	var wg sync.WaitGroup
	for c := range clients {
		// client c reads partitions c, c+clients, ...
		assign := map[int32]kgo.Offset{}
		for p := c; p < parts; p += clients {
			assign[int32(p)] = kgo.NewOffset().AtStart()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for total.Load() < int64(n) {
				fs, err := pollWatched(ctx, cl)
				if err != nil {
					if total.Load() < int64(n) {
						errs[c] = err
					}
					return
				}
				if total.Add(int64(fs.NumRecords())) >= int64(n) {
					done()
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if got := total.Load(); got != int64(n) {
		return 0, fmt.Errorf("consumed %d records, produced %d", got, n)
	}
	return el, nil
}

// brokerLatency sends c.latRate records a second for c.latSeconds, each
// stamped with its send time (UnixNano, the value's first 8 bytes), while
// a consumer follows the topic; it returns each record's latency, from its
// send to the consumer's poll returning it, and the rate achieved.
func brokerLatency(ctx context.Context, addr, topic string, c brokerBenchConfig, values [][]byte) ([]time.Duration, float64, error) {
	total := max(1, int(float64(c.latRate)*c.latSeconds))
	cons, err := newBenchConsumer(addr, topic)
	if err != nil {
		return nil, 0, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(c.latLinger))
	if err != nil {
		return nil, 0, err
	}
	defer prod.Close()

	lats := make([]time.Duration, 0, total)
	warm := make(chan struct{})
	consumed := make(chan error, 1)
	go func() {
		warmed := false
		for len(lats) < total {
			fs, err := pollWatched(ctx, cons)
			if err != nil {
				consumed <- err
				return
			}
			now := time.Now()
			var ferr error
			fs.EachRecord(func(r *kgo.Record) {
				sent := int64(binary.BigEndian.Uint64(r.Value))
				switch {
				case sent == 0: // the warm-up record
					if !warmed {
						warmed = true
						close(warm)
					}
				case !warmed:
					ferr = errors.New("a stamped record before the warm-up record")
				default:
					lats = append(lats, now.Sub(time.Unix(0, sent)))
				}
			})
			if ferr != nil {
				consumed <- ferr
				return
			}
		}
		consumed <- nil
	}()

	// A warm-up record, unstamped: the consumer has found its partitions
	// and polls when it arrives.
	wv := make([]byte, c.size)
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: wv}).FirstErr(); err != nil {
		return nil, 0, err
	}
	select {
	case <-warm:
	case err := <-consumed:
		return nil, 0, fmt.Errorf("before the warm-up record: %v", err)
	case <-time.After(brokerBenchStall):
		return nil, 0, fmt.Errorf("the consumer did not see the warm-up record in %s", brokerBenchStall)
	}

	var tally produceTally
	cb := tally.done
	interval := float64(time.Second) / float64(c.latRate)
	start := time.Now()
	for i := range total {
		if d := time.Until(start.Add(time.Duration(float64(i) * interval))); d > 0 {
			time.Sleep(d)
		}
		v := make([]byte, c.size)
		copy(v, values[i%len(values)])
		binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
		prod.Produce(ctx, &kgo.Record{Value: v}, cb)
	}
	sent := float64(total) / time.Since(start).Seconds()
	if err := flushWatched(ctx, prod, &tally.acked); err != nil {
		return nil, 0, err
	}
	if p := tally.firstErr.Load(); p != nil {
		return nil, 0, *p
	}
	if err := <-consumed; err != nil {
		return nil, 0, err
	}
	return lats, sent, nil
}

// percentileMs is the q-quantile of ds (nearest rank) in milliseconds.
func percentileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := max(0, int(math.Ceil(q*float64(len(s))))-1)
	return float64(s[min(i, len(s)-1)]) / float64(time.Millisecond)
}
