package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/testing/crashtest"
	"github.com/weirstream/weir/internal/testing/poll"
)

// brokerProc is `weir broker` as a real process.
type brokerProc struct {
	t        *testing.T
	bin, dir string
	addr     string
	cmd      *exec.Cmd
}

// start starts the broker and waits until it accepts connections. It
// returns an error rather than failing the test: the kills run in a
// goroutine of their own.
func (p *brokerProc) start() error {
	p.cmd = exec.Command(p.bin, "--data-dir", p.dir, "--listen", p.addr)
	if err := p.cmd.Start(); err != nil {
		return err
	}
	listening := poll.Poll(time.Minute, func() bool {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if !listening {
		return fmt.Errorf("weir broker did not listen on %s within a minute", p.addr)
	}
	return nil
}

func (p *brokerProc) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// TestBrokerKilledDuringTransactions SIGKILLs `weir broker` while a
// transactional producer commits transactions of 20 records, three times,
// restarting it on the same directory. Every transaction whose commit was
// acknowledged must be read (read_committed) exactly once; a transaction
// whose EndTxn failed may be there or not, but whole and once; no record
// twice.
func TestBrokerKilledDuringTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes")
	}
	bin := crashtest.Build(t, "./internal/brokerproc")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &brokerProc{t: t, bin: bin, dir: t.TempDir(), addr: addr}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	defer func() { p.kill() }()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 2, 1, nil, "out"); err != nil {
		t.Fatal(err)
	}
	admin.Close()

	const txns, per, kills = 60, 20, 3
	var committed atomic.Int64
	acked := map[int]bool{}
	killed := make(chan error, 1)
	go func() {
		for k := 1; k <= kills; k++ {
			// Kill once k*txns/(kills+1) transactions are committed: the
			// producer is in the middle of the next one.
			if !poll.Poll(4*time.Minute, func() bool { return committed.Load() >= int64(k*txns/(kills+1)) || ctx.Err() != nil }) || ctx.Err() != nil {
				killed <- fmt.Errorf("kill %d: the producer made no progress", k)
				return
			}
			p.kill()
			if err := p.start(); err != nil {
				killed <- err
				return
			}
		}
		killed <- nil
	}()
	newProducer := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("killed"), kgo.DefaultProduceTopic("out"),
			kgo.TransactionTimeout(10*time.Second), kgo.RetryTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl := newProducer()
	began := time.Now()
	for i := 0; i < txns; i++ {
		err := func() error {
			if err := cl.BeginTransaction(); err != nil {
				return err
			}
			for j := range per {
				v := fmt.Sprintf("%d-%d", i, j)
				if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(j)), Value: []byte(v)}).FirstErr(); err != nil {
					return err
				}
			}
			return cl.EndTransaction(ctx, kgo.TryCommit)
		}()
		if ctx.Err() != nil {
			t.Fatalf("out of time at transaction %d", i)
		}
		if err != nil {
			t.Logf("transaction %d at %v: %v (starting a new producer)", i, time.Since(began).Round(time.Millisecond), err)
			cl.Close()
			cl = newProducer()
			continue
		}
		acked[i] = true
		committed.Add(1)
		if testing.Verbose() {
			t.Logf("transaction %d committed at %v", i, time.Since(began).Round(time.Millisecond))
		}
	}
	cl.Close()
	if err := <-killed; err != nil {
		t.Fatal(err)
	}

	recs := consumeFrom(t, addr, "out", len(acked)*per)
	count := map[string]int{}
	perTxn := map[int]int{}
	for _, r := range recs {
		count[string(r.Value)]++
		var i, j int
		fmt.Sscanf(string(r.Value), "%d-%d", &i, &j)
		perTxn[i]++
	}
	for v, n := range count {
		if n > 1 {
			t.Errorf("record %s read %d times", v, n)
		}
	}
	for i := range txns {
		switch n := perTxn[i]; {
		case acked[i] && n != per:
			t.Errorf("acknowledged transaction %d: %d records of %d", i, n, per)
		case n != 0 && n != per:
			t.Errorf("transaction %d (commit not acknowledged) is partly there: %d records of %d", i, n, per)
		}
	}
	t.Logf("%d kills; %d of %d transactions acknowledged, %d records read once each", kills, len(acked), txns, len(recs))
}

// consumeFrom reads topic read_committed from the start until at least
// n records arrived and the ends are reached.
func consumeFrom(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []*kgo.Record
	seen := map[int32]int64{}
	done := func() bool {
		if len(out) < n {
			return false
		}
		ok := true
		ends.Each(func(o kadm.ListedOffset) {
			if seen[o.Partition] < o.Offset {
				ok = false
			}
		})
		return ok
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d records of at least %d: %v", len(out), n, errors.Join(err))
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			seen[r.Partition] = r.Offset + 1
		})
	}
	return out
}
