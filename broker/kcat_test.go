package broker

// Interoperability tests with kcat, Debian's command-line Kafka client
// built on librdkafka: a client that nobody here wrote, with its own
// choices of request versions, batching, compression and group protocol.
// kcat is installed by scripts/kcat.sh (WEIR_KCAT names another binary).
// Without it the tests skip, unless WEIR_REQUIRE_KCAT=1 (scripts/test.sh)
// makes that a failure.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/testing/weirtest"
)

// kcatPath returns the kcat binary, or skips (fails under
// WEIR_REQUIRE_KCAT=1) the test when there is none.
func kcatPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("WEIR_KCAT")
	if path != "" {
		if _, err := exec.LookPath(path); err != nil {
			t.Fatalf("WEIR_KCAT=%s: %v", path, err)
		}
	} else {
		for _, name := range []string{"kcat", "kafkacat"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		if os.Getenv("WEIR_REQUIRE_KCAT") == "1" {
			t.Fatal("no kcat found and WEIR_REQUIRE_KCAT=1: run bash scripts/kcat.sh install")
		}
		t.Skip("no kcat found (bash scripts/kcat.sh install; WEIR_REQUIRE_KCAT=1 makes this a failure)")
	}
	return path
}

// kcatTimeout bounds one kcat run that is expected to end by itself.
const kcatTimeout = 60 * time.Second

// runKcat2 runs kcat to its end with stdin and returns its standard
// output and standard error; a non-zero exit or the deadline fails the
// test, with both.
func runKcat2(t *testing.T, kcat, stdin string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (killed at the %s deadline)", err, kcatTimeout)
		}
		t.Fatalf("kcat %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// runKcat is runKcat2 for its standard output.
func runKcat(t *testing.T, kcat, stdin string, args ...string) string {
	t.Helper()
	out, _ := runKcat2(t, kcat, stdin, args...)
	return out
}

// kcatBase is the options every kcat run gets: the broker, and a client
// that gives up quickly rather than retrying for minutes.
func kcatBase(b *Broker) []string {
	return []string{"-b", b.Addr(), "-X", "broker.address.family=v4", "-X", "socket.timeout.ms=20000"}
}

// endOffsets returns the high watermark of every partition of topic.
func endOffsets(t *testing.T, cl *kgo.Client, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// kcat produces keyed records (-P -K:), uncompressed, with each codec
// librdkafka has, and as an idempotent producer; franz-go reads every
// record back with its key and value, each partition in the order kcat
// sent them, and the partitions hold nothing else. librdkafka's debug log
// (-d msg) shows what it sent: batches compressed with the codec asked
// for (librdkafka sends a batch uncompressed, and says so, when it
// believes the broker does not take the codec), and for the idempotent
// producer batches with a producer id and sequence numbers.
func TestKcatProduce(t *testing.T) {
	kcat := kcatPath(t)
	t.Parallel()
	b := startBroker(t, t.TempDir())
	t.Cleanup(func() { b.Close() })
	cl := newClient(t, b)
	for _, tc := range []struct {
		name  string
		extra []string
		// sent is what each "Produce MessageSet" line of the debug log
		// must end with.
		sent string
	}{
		{"none", nil, ", uncompressed)"},
		{"snappy", []string{"-z", "snappy"}, ", snappy)"},
		{"gzip", []string{"-z", "gzip"}, ", gzip)"},
		{"lz4", []string{"-z", "lz4"}, ", lz4)"},
		{"zstd", []string{"-z", "zstd"}, ", zstd)"},
		{"idempotent", []string{"-X", "enable.idempotence=true"}, ", uncompressed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "kcat-produce-" + tc.name
			createTopic(t, cl, topic, 3, nil)
			const n = 500
			var in strings.Builder
			want := map[string]string{}
			for i := range n {
				k := fmt.Sprintf("key-%03d", i)
				// Compressible values (so that librdkafka does compress
				// the batches), holding the key delimiter too.
				v := fmt.Sprintf("value %d: %s", i, strings.Repeat("weir ", 20+i%7))
				want[k] = v
				fmt.Fprintf(&in, "%s:%s\n", k, v)
			}
			args := append(kcatBase(b), "-P", "-t", topic, "-K", ":", "-X", "linger.ms=20", "-d", "msg")
			args = append(args, tc.extra...)
			_, stderr := runKcat2(t, kcat, in.String(), args...)
			var sets []string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.Contains(l, "not compressing batch") {
					t.Errorf("librdkafka sent a batch uncompressed: %s", l)
				}
				if strings.Contains(l, "Produce MessageSet with") {
					sets = append(sets, l)
					if !strings.HasSuffix(l, tc.sent) {
						t.Errorf("librdkafka sent a batch that is not as asked (%s): %s", strings.TrimSuffix(strings.TrimPrefix(tc.sent, ", "), ")"), l)
					}
					if tc.name == "idempotent" && (strings.Contains(l, "PID{Invalid}") || strings.Contains(l, "BaseSeq -1")) {
						t.Errorf("the idempotent producer sent a batch without a producer id or sequence: %s", l)
					}
				}
			}
			if len(sets) == 0 {
				t.Errorf("kcat -d msg logged no \"Produce MessageSet\" line:\n%s", stderr)
			}

			recs := consumeAll(t, b, topic, n)
			if len(recs) != n {
				t.Fatalf("consumed %d records, want %d", len(recs), n)
			}
			var total int64
			for p, end := range endOffsets(t, cl, topic) {
				if end < 0 {
					t.Fatalf("partition %d: end offset %d", p, end)
				}
				total += end
			}
			if total != n {
				t.Fatalf("the partitions of %s hold %d records, want %d", topic, total, n)
			}
			last := map[int32]int{} // partition -> index of the last key read
			seen := map[string]bool{}
			for _, r := range recs {
				k := string(r.Key)
				w, ok := want[k]
				if !ok {
					t.Fatalf("record %d of partition %d: key %q was not produced", r.Offset, r.Partition, r.Key)
				}
				if seen[k] {
					t.Fatalf("key %q read twice", k)
				}
				seen[k] = true
				if string(r.Value) != w {
					t.Fatalf("key %q: value %q, want %q", k, r.Value, w)
				}
				i, _ := strconv.Atoi(strings.TrimPrefix(k, "key-"))
				if prev, ok := last[r.Partition]; ok && i <= prev {
					t.Fatalf("partition %d: key-%03d after key-%03d: not in the order kcat sent them", r.Partition, i, prev)
				}
				last[r.Partition] = i
			}
			if len(last) < 2 {
				t.Fatalf("all %d keyed records in %d partition(s) of 3: kcat's partitioner spreads them", n, len(last))
			}
		})
	}
}

// franz-go produces records with headers, a null key, a null and an empty
// value to two partitions; kcat reads them all (read_uncommitted and
// read_committed) and prints exactly what was produced, each partition in
// offset order.
func TestKcatConsume(t *testing.T) {
	kcat := kcatPath(t)
	t.Parallel()
	b := startBroker(t, t.TempDir())
	t.Cleanup(func() { b.Close() })
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic = "kcat-consume"
	createTopic(t, cl, topic, 2, nil)
	const n = 300
	var recs []*kgo.Record
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))}
		switch i % 3 {
		case 1:
			r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}}
		case 2:
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("t" + fmt.Sprint(i))}, {Key: "empty", Value: []byte{}}, {Key: "trace", Value: []byte("again")}}
		}
		switch i {
		case 10:
			r.Key = nil
		case 11:
			r.Value = nil // a tombstone
		case 12:
			r.Value = []byte{}
		case 13:
			r.Key = []byte{}
		}
		recs = append(recs, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// -Z prints a null key or value as NULL and an empty one as nothing;
	// but librdkafka before 2.1 (Debian bookworm's kcat has 2.0.2) hands
	// an empty key or value to kcat as a null one, so an empty one may
	// print either way. The broker keeps the two apart (franz-go sees
	// them), so only a null one printed empty is wrong.
	show := func(b []byte) []string {
		switch {
		case b == nil:
			return []string{"NULL"}
		case len(b) == 0:
			return []string{"", "NULL"}
		}
		return []string{string(b)}
	}
	want := map[string][]string{} // partition|offset -> the lines kcat may print
	for _, r := range recs {
		var hs []string
		for _, h := range r.Headers {
			hs = append(hs, h.Key+"="+string(h.Value))
		}
		po := fmt.Sprintf("%d|%d", r.Partition, r.Offset)
		for _, k := range show(r.Key) {
			for _, v := range show(r.Value) {
				want[po] = append(want[po], fmt.Sprintf("%s|%s|%s|%s", po, k, v, strings.Join(hs, ",")))
			}
		}
	}
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"read_uncommitted", nil},
		{"read_committed", []string{"-X", "isolation.level=read_committed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(kcatBase(b), "-C", "-t", topic, "-o", "beginning", "-e", "-Z", "-f", `%p|%o|%k|%s|%h\n`)
			args = append(args, tc.extra...)
			out := runKcat(t, kcat, "", args...)
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			next := map[string]int64{} // partition -> records printed
			var bad []string
			for _, l := range got {
				f := strings.SplitN(l, "|", 3)
				if len(f) < 3 {
					t.Fatalf("kcat printed %q: not partition|offset|...", l)
				}
				off, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					t.Fatalf("kcat printed %q: %v", l, err)
				}
				// Each partition in offset order, from 0, without gaps.
				if off != next[f[0]] {
					t.Fatalf("partition %s: offset %d after %d records", f[0], off, next[f[0]])
				}
				next[f[0]]++
				if ok := want[f[0]+"|"+f[1]]; !slices.Contains(ok, l) {
					bad = append(bad, fmt.Sprintf("got %q, want %q", l, ok))
				}
			}
			if len(bad) > 0 {
				t.Fatalf("%d of the %d records kcat printed differ from those produced; the first ones:\n%s", len(bad), len(got), strings.Join(bad[:min(len(bad), 10)], "\n"))
			}
			if len(got) != n {
				t.Fatalf("kcat printed %d records (per partition %v), want %d", len(got), next, n)
			}
		})
	}
}

// kcatMetadata is the part of kcat -L -J's output the test reads.
type kcatMetadata struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Error      string `json:"error"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
			Replicas  []struct {
				ID int32 `json:"id"`
			} `json:"replicas"`
			ISRs []struct {
				ID int32 `json:"id"`
			} `json:"isrs"`
		} `json:"partitions"`
	} `json:"topics"`
}

// kcat -L lists the broker, the topics and their partitions; -L -t names
// one topic, and a topic that does not exist is listed with an error.
func TestKcatMetadata(t *testing.T) {
	kcat := kcatPath(t)
	t.Parallel()
	b := startBroker(t, t.TempDir())
	t.Cleanup(func() { b.Close() })
	cl := newClient(t, b)
	createTopic(t, cl, "kcat-meta-four", 4, nil)
	createTopic(t, cl, "kcat-meta-one", 1, nil)

	// The plain listing.
	out := runKcat(t, kcat, "", append(kcatBase(b), "-L")...)
	for _, s := range []string{
		"1 brokers:",
		"broker 0 at " + b.Addr(),
		`topic "kcat-meta-four" with 4 partitions:`,
		`topic "kcat-meta-one" with 1 partitions:`,
		"partition 3, leader 0, replicas: 0, isrs: 0",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("kcat -L does not say %q:\n%s", s, out)
		}
	}

	// JSON, all topics and then one.
	parse := func(out string) kcatMetadata {
		t.Helper()
		var md kcatMetadata
		if err := json.Unmarshal([]byte(out), &md); err != nil {
			t.Fatalf("kcat -L -J printed %q: %v", out, err)
		}
		return md
	}
	md := parse(runKcat(t, kcat, "", append(kcatBase(b), "-L", "-J")...))
	if len(md.Brokers) != 1 || md.Brokers[0].ID != 0 || md.Brokers[0].Name != b.Addr() {
		t.Errorf("brokers %+v, want one: 0 at %s", md.Brokers, b.Addr())
	}
	parts := map[string]int{}
	for _, tp := range md.Topics {
		if tp.Error != "" {
			t.Errorf("topic %s: error %q", tp.Topic, tp.Error)
		}
		parts[tp.Topic] = len(tp.Partitions)
		for i, p := range tp.Partitions {
			if p.Partition != int32(i) || p.Leader != 0 || len(p.Replicas) != 1 || p.Replicas[0].ID != 0 || len(p.ISRs) != 1 || p.ISRs[0].ID != 0 {
				t.Errorf("topic %s: partition %d is %+v, want partition %d led by 0, replicas and isrs [0]", tp.Topic, i, p, i)
			}
		}
	}
	if parts["kcat-meta-four"] != 4 || parts["kcat-meta-one"] != 1 {
		t.Errorf("kcat -L -J lists topics with partitions %v, want kcat-meta-four: 4, kcat-meta-one: 1", parts)
	}

	md = parse(runKcat(t, kcat, "", append(kcatBase(b), "-L", "-J", "-t", "kcat-meta-four")...))
	if len(md.Topics) != 1 || md.Topics[0].Topic != "kcat-meta-four" || len(md.Topics[0].Partitions) != 4 || md.Topics[0].Error != "" {
		t.Errorf("kcat -L -J -t kcat-meta-four: topics %+v, want kcat-meta-four with 4 partitions", md.Topics)
	}

	md = parse(runKcat(t, kcat, "", append(kcatBase(b), "-L", "-J", "-t", "kcat-meta-missing")...))
	if len(md.Topics) != 1 || md.Topics[0].Topic != "kcat-meta-missing" || md.Topics[0].Error == "" || len(md.Topics[0].Partitions) != 0 {
		t.Errorf("kcat -L -J -t kcat-meta-missing: topics %+v, want the topic with an error and no partitions", md.Topics)
	}
}

// kcat -Q finds the first offset at or after a timestamp (ListOffsets by
// time), and the ends with -1 (latest) and -2 (earliest).
func TestKcatQueryOffsets(t *testing.T) {
	kcat := kcatPath(t)
	t.Parallel()
	b := startBroker(t, t.TempDir())
	t.Cleanup(func() { b.Close() })
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic = "kcat-query"
	createTopic(t, cl, topic, 2, nil)
	// Partition 0: ten records a second apart from t0; partition 1: five
	// records a minute apart from t0.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i)), Timestamp: t0.Add(time.Duration(i) * time.Second)})
	}
	for i := range 5 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 1, Value: []byte(fmt.Sprint(i)), Timestamp: t0.Add(time.Duration(i) * time.Minute)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	for _, tc := range []struct {
		name string
		part int32
		ts   int64
		want int64
	}{
		{"p0-first", 0, ms(0), 0},
		{"p0-before-first", 0, ms(-time.Hour), 0},
		{"p0-exact", 0, ms(3 * time.Second), 3},
		{"p0-between", 0, ms(3500 * time.Millisecond), 4},
		{"p0-last", 0, ms(9 * time.Second), 9},
		{"p0-after-last", 0, ms(10 * time.Second), -1}, // none
		{"p0-latest", 0, -1, 10},
		{"p0-earliest", 0, -2, 0},
		{"p1-between", 1, ms(90 * time.Second), 2},
		{"p1-last", 1, ms(4 * time.Minute), 4},
		{"p1-latest", 1, -1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := fmt.Sprintf("%s:%d:%d", topic, tc.part, tc.ts)
			out := runKcat(t, kcat, "", append(kcatBase(b), "-Q", "-J", "-t", q)...)
			// {"kcat-query":{"topic":"kcat-query","0":{"partition":0,"offset":3}}}
			var res map[string]map[string]json.RawMessage
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("kcat -Q -J -t %s printed %q: %v", q, out, err)
			}
			raw, ok := res[topic][strconv.Itoa(int(tc.part))]
			if !ok {
				t.Fatalf("kcat -Q -J -t %s printed %s: no partition %d", q, out, tc.part)
			}
			var p struct {
				Partition int32  `json:"partition"`
				Offset    *int64 `json:"offset"`
				Error     string `json:"error"`
			}
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatalf("kcat -Q -J -t %s printed %s: %v", q, out, err)
			}
			if p.Error != "" || p.Offset == nil || *p.Offset != tc.want || p.Partition != tc.part {
				t.Fatalf("kcat -Q -t %s printed %s, want offset %d", q, out, tc.want)
			}
		})
	}
}

// kcatRecord is a line of a group consumer's output: partition|offset|value.
type kcatRecord struct {
	part   int32
	offset int64
	value  string
}

// kcatConsumer is a kcat -G process and what it printed so far.
type kcatConsumer struct {
	name   string
	cmd    *exec.Cmd
	stderr weirtest.LockedBuffer
	done   chan struct{} // standard output closed

	mu   sync.Mutex
	recs []kcatRecord
	bad  []string // lines that are not partition|offset|value
}

func startKcatConsumer(t *testing.T, kcat, name string, args ...string) *kcatConsumer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	c := &kcatConsumer{name: name, cmd: exec.CommandContext(ctx, kcat, args...), done: make(chan struct{})}
	c.cmd.Stderr = &c.stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start kcat %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l := sc.Text()
			f := strings.SplitN(l, "|", 3)
			var r kcatRecord
			var err1, err2 error
			if len(f) == 3 {
				var p int64
				p, err1 = strconv.ParseInt(f[0], 10, 32)
				r.offset, err2 = strconv.ParseInt(f[1], 10, 64)
				r.part, r.value = int32(p), f[2]
			}
			c.mu.Lock()
			if len(f) != 3 || err1 != nil || err2 != nil {
				c.bad = append(c.bad, l)
			} else {
				c.recs = append(c.recs, r)
			}
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
		c.cmd.Wait()
		cancel()
	})
	return c
}

// kill ends the process at once (no LeaveGroup: the broker has to notice
// that its session expired) and waits for it.
func (c *kcatConsumer) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", c.name, err)
	}
	<-c.done
	c.cmd.Wait()
}

func (c *kcatConsumer) records() []kcatRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recs)
}

// describe is the consumer's state for a failure message.
func (c *kcatConsumer) describe() string {
	c.mu.Lock()
	n, bad := len(c.recs), slices.Clone(c.bad)
	parts := map[int32]int{}
	for _, r := range c.recs {
		parts[r.part]++
	}
	c.mu.Unlock()
	exited := "running"
	select {
	case <-c.done:
		exited = "exited"
	default:
	}
	return fmt.Sprintf("%s (%s): %d records, per partition %v, bad lines %q; stderr:\n%s", c.name, exited, n, parts, bad, c.stderr.String())
}

// waitUntil calls step and then checks cond every 100ms until cond holds,
// and fails the test with what() at the deadline.
func waitUntil(t *testing.T, d time.Duration, step func(), cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if step != nil {
			step()
		}
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not so after %s: %s", d, what())
		}
		<-tick.C
	}
}

// Two kcat -G consumers in one group share a 4-partition topic: both get
// records, each record produced once both are in goes to exactly one of
// them. One is killed (no LeaveGroup); when its session expires the group
// rebalances and the other one gets all four partitions, and every record
// produced after the kill.
func TestKcatConsumerGroup(t *testing.T) {
	kcat := kcatPath(t)
	t.Parallel()
	b := startBroker(t, t.TempDir())
	t.Cleanup(func() { b.Close() })
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic, group, parts = "kcat-group", "kcat-group-g", 4
	createTopic(t, cl, topic, parts, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seq := 0
	// produce writes one record prefix-N to each partition and returns
	// their values.
	produce := func(prefix string) []string {
		var recs []*kgo.Record
		var vals []string
		for p := range int32(parts) {
			v := fmt.Sprintf("%s-%d", prefix, seq)
			seq++
			vals = append(vals, v)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		return vals
	}

	args := append(kcatBase(b),
		"-X", "session.timeout.ms=6000",
		"-X", "heartbeat.interval.ms=300",
		"-X", "auto.commit.interval.ms=200",
		"-X", "topic.metadata.refresh.interval.ms=1000",
		"-o", "beginning",
		"-u", // unbuffered: each record is printed when it arrives
		"-f", `%p|%o|%s\n`,
		"-G", group, topic)
	a := startKcatConsumer(t, kcat, "consumer a", args...)
	c := startKcatConsumer(t, kcat, "consumer b", args...)
	both := func() string { return a.describe() + "\n" + c.describe() }

	// Both get records: keep producing until they do.
	waitUntil(t, 60*time.Second, func() { produce("warmup") },
		func() bool { return len(a.records()) > 0 && len(c.records()) > 0 }, both)

	// Now that both are members, each new record goes to one of them.
	markers := produce("marker")
	count := func(c *kcatConsumer, vals []string) map[string]int {
		m := map[string]int{}
		for _, r := range c.records() {
			if slices.Contains(vals, r.value) {
				m[r.value]++
			}
		}
		return m
	}
	waitUntil(t, 30*time.Second, nil, func() bool {
		ma, mb := count(a, markers), count(c, markers)
		for _, v := range markers {
			if ma[v]+mb[v] == 0 {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("markers %v not all consumed:\n%s", markers, both()) })
	ma, mb := count(a, markers), count(c, markers)
	for _, v := range markers {
		if ma[v]+mb[v] != 1 {
			t.Fatalf("marker %s consumed %d times by a and %d by b, want once by one of them:\n%s", v, ma[v], mb[v], both())
		}
	}
	if len(ma) == 0 || len(mb) == 0 {
		t.Fatalf("markers %v: a got %v and b got %v; want each to hold some partitions:\n%s", markers, ma, mb, both())
	}

	// Kill a: b has to take over its partitions.
	a.kill(t)
	killed := time.Now()
	var after []string
	waitUntil(t, 60*time.Second, func() { after = append(after, produce("after")...) }, func() bool {
		got := map[int32]bool{}
		for _, r := range c.records() {
			if strings.HasPrefix(r.value, "after-") {
				got[r.part] = true
			}
		}
		return len(got) == parts
	}, func() string {
		return fmt.Sprintf("b does not consume all %d partitions %s after a was killed:\n%s", parts, time.Since(killed), both())
	})
	t.Logf("b consumed all %d partitions %s after a was killed", parts, time.Since(killed).Round(time.Millisecond))
	// Nothing produced after the kill is lost: a committed none of it.
	waitUntil(t, 30*time.Second, nil, func() bool {
		m := count(c, after)
		return len(m) == len(after)
	}, func() string {
		m := count(c, after)
		var missing []string
		for _, v := range after {
			if m[v] == 0 {
				missing = append(missing, v)
			}
		}
		return fmt.Sprintf("b has not consumed %d of the %d records produced after the kill (%v):\n%s", len(missing), len(after), missing, both())
	})
}
