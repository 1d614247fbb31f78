package adclicks

import (
	"context"
	"io"
	"testing"

	"github.com/weirstream/weir"
)

// The jump-ahead is math/rand/v2's PCG advanced step by step.
func TestPCGJumpMatchesStepping(t *testing.T) {
	for _, k := range []uint64{0, 1, 2, 3, 7, 1000, 2048, 12345} {
		var stepped, jumped Gen
		stepped.rng.Seed(Seed, Seed)
		jumped.rng.Seed(Seed, Seed)
		for range k {
			stepped.rng.Uint64()
		}
		jumped.jump(pcgJump(k), 0)
		for d := 0; d < 3; d++ {
			if a, b := stepped.rng.Uint64(), jumped.rng.Uint64(); a != b {
				t.Fatalf("jump %d, draw %d: %x, stepping gives %x", k, d, b, a)
			}
		}
	}
}

// readAll reads every split (in small reads that cut blocks) and checks
// each event against the one-split stream.
func readAll(t *testing.T, src weir.Source[Click], want []Click, seen []int, buf int) {
	t.Helper()
	ctx := context.Background()
	splits, err := src.Splits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range splits {
		r, err := src.Open(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]Click, buf)
		last := int64(-1)
		for {
			k, err := r.Read(ctx, dst)
			for _, c := range dst[:k] {
				idx := indexOf(t, want, c, last)
				if (idx/SplitBlock)%int64(len(splits)) != int64(splitIndex(sp)) {
					t.Fatalf("split %s produced event %d of another split's block", sp.ID(), idx)
				}
				seen[idx]++
				last = idx
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
	}
}

func splitIndex(sp weir.Split) int {
	if b, ok := sp.(blockSplit); ok {
		return b.s
	}
	return 0
}

// indexOf finds c in want after index last (each split is in index order).
func indexOf(t *testing.T, want []Click, c Click, last int64) int64 {
	t.Helper()
	for i := last + 1; i < int64(len(want)); i++ {
		if want[i] == c {
			return i
		}
	}
	t.Fatalf("event %+v not found after index %d", c, last)
	return -1
}

// The splits together produce exactly the one-split stream's events, each
// once, each split in index order and only from its own blocks.
func TestSplitSourceSameEvents(t *testing.T) {
	const n = 10*SplitBlock + 77 // a partial last block
	g := NewGen(n, JitterMs, Seed)
	want := make([]Click, n)
	if k := g.Fill(want); k != n {
		t.Fatal(k)
	}
	for _, splits := range []int{1, 2, 3, 4, 11, 12} {
		for _, buf := range []int{1000, 333, SplitBlock} {
			seen := make([]int, n)
			readAll(t, SplitSource(n, JitterMs, Seed, 0, splits), want, seen, buf)
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("splits %d buf %d: event %d produced %d times", splits, buf, i, c)
				}
			}
		}
	}
}

// A split reopened at a saved position goes on with the same events.
func TestSplitSourceRestore(t *testing.T) {
	ctx := context.Background()
	const n = 8*SplitBlock + 5
	src := SplitSource(n, JitterMs, Seed, 0, 3)
	splits, _ := src.Splits(ctx)
	for _, sp := range splits {
		r, _ := src.Open(ctx, sp)
		head := make([]Click, 1500)
		k, _ := r.Read(ctx, head)
		pos, err := r.(weir.CheckpointedReader[Click]).Position()
		if err != nil {
			t.Fatal(err)
		}
		rest := func(r weir.SplitReader[Click]) []Click {
			var out []Click
			buf := make([]Click, 700)
			for {
				k, err := r.Read(ctx, buf)
				out = append(out, buf[:k]...)
				if err == io.EOF {
					return out
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		a := rest(r)
		r2, err := src.(weir.RestorableSource[Click]).OpenAt(ctx, sp, pos)
		if err != nil {
			t.Fatal(err)
		}
		b := rest(r2)
		if len(a) != len(b) || k == 0 {
			t.Fatalf("split %s: %d events after the position, %d after restoring (head %d)", sp.ID(), len(a), len(b), k)
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("split %s: event %d after restore differs", sp.ID(), i)
			}
		}
	}
	if _, err := src.(weir.RestorableSource[Click]).OpenAt(ctx, blockSplit{1, 3}, append([]byte{0, 0, 0, 0, 0, 0, 0, 0}, make([]byte, 20)...)); err == nil {
		t.Error("a position in split 0's block was accepted by split 1")
	}
}

// With a watermark delay covering the jitter the digest is the reference's
// at every parallelism and number of splits, whatever the interleaving.
func TestWeirJobSplitSourceDigests(t *testing.T) {
	n := int64(1_000_000)
	if testing.Short() {
		n = 200_000
	}
	want := RunBaseline(n, DelayMs)
	for p := 1; p <= 4; p++ {
		for _, splits := range []int{1, 2, 3, 4} {
			got, err := RunWeir(context.Background(), BenchConfig{N: n, DelayMs: DelayMs, Parallelism: p, Splits: splits})
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("parallelism %d splits %d: weir %s, baseline %s", p, splits, got, want)
			}
		}
	}
}

// A split runs at most MaxDrift events (plus one read) ahead of the slowest
// open split, then returns no events until that split advances; a split
// that is not open, or closed, holds no one back.
func TestSplitSourceDrift(t *testing.T) {
	ctx := context.Background()
	const n = 100 * SplitBlock
	src := SplitSource(n, JitterMs, Seed, 0, 2)
	splits, _ := src.Splits(ctx)
	r0, _ := src.Open(ctx, splits[0])
	buf := make([]Click, SplitBlock)
	read := func(r weir.SplitReader[Click]) int {
		k, err := r.Read(ctx, buf)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		return k
	}
	// Split 1 not open yet: split 0 is free to run.
	for i := 0; i < 40; i++ {
		if read(r0) == 0 {
			t.Fatalf("split 0 held back by a split that is not open, at read %d", i)
		}
	}
	r1, _ := src.Open(ctx, splits[1]) // at event 1024, far behind split 0
	if k := read(r0); k != 0 {
		t.Fatalf("split 0, %d events ahead of split 1, read %d more", r0.(*splitReader).g.i-SplitBlock, k)
	}
	for read(r1) > 0 && r1.(*splitReader).g.i < r0.(*splitReader).g.i-MaxDrift {
	}
	if k := read(r0); k == 0 {
		t.Fatal("split 0 still held back after split 1 caught up")
	}
	r1.Close()
	total := 0
	for {
		k, err := r0.Read(ctx, buf)
		total += k
		if err == io.EOF {
			break
		}
		if k == 0 {
			t.Fatal("split 0 held back by a closed split")
		}
	}
	r0.Close()
}
