package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/incremental"
	"github.com/weirstream/weir/internal/state/pebblestate"
)

// memoryProbe is a process function that notes the Pebble budget its
// subtask's database was opened in.
type memoryProbe struct {
	mu   *sync.Mutex
	mems *[]*pebblestate.Memory
}

func (p memoryProbe) Open(rc *RuntimeContext[int64]) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := rc.backend.(*incremental.Backend); ok {
		*p.mems = append(*p.mems, b.Memory())
	} else {
		*p.mems = append(*p.mems, nil)
	}
	return nil
}

func (memoryProbe) ProcessElement(ctx *KeyedContext[int64, int64], v int64) error {
	ctx.Emit(v)
	return nil
}

// TestPebbleMemoryPerProcess: PebbleState's memory budget bounds the
// process, not each operator: the databases of every subtask of every
// operator share one block cache of half the budget, and their memtables
// (at most two each) add up to the other half. Before, each operator had
// the whole budget (its subtasks a share each), so a SQL job of five
// stateful operators could use five times the budget it was given.
func TestPebbleMemoryPerProcess(t *testing.T) {
	const budget = 64 << 20
	var mu sync.Mutex
	var mems []*pebblestate.Memory
	j := NewJob("pebble-memory", PebbleState(t.TempDir(), budget), Parallelism(2))
	in := make([]int64, 100)
	for i := range in {
		in[i] = int64(i)
	}
	s := FromSource(j, "src", SliceSource(in), NoWatermarks[int64]())
	for i := range 3 {
		ks := KeyBy(s, func(v int64) int64 { return v })
		s = Process(ks, KeyedProcessFunction[int64, int64, int64](memoryProbe{&mu, &mems}), Name("probe-"+string(rune('a'+i))))
	}
	out := Collect(s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := j.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(out.Items()); n != len(in) {
		t.Fatalf("%d records out, want %d", n, len(in))
	}
	if len(mems) != 6 {
		t.Fatalf("%d databases opened, want 6 (3 operators of 2 subtasks)", len(mems))
	}
	var total int64
	caches := map[*pebblestate.Memory]bool{}
	for _, m := range mems {
		if m == nil {
			t.Fatal("a subtask's state is not in Pebble")
		}
		if !caches[m] {
			caches[m] = true
			total += m.CacheSize()
		}
		total += 2*m.MemTableSize() + m.RecordCacheSize()
	}
	if len(caches) != 1 || total > budget {
		t.Fatalf("%d block caches; caches, memtables and record caches add up to %d bytes, over the budget of %d", len(caches), total, budget)
	}
}
