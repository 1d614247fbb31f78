package adclicks

import (
	"context"
	"testing"
)

// The reference digests of docs/workload.md at N = 5,000,000.
func TestBaselineReferenceDigests(t *testing.T) {
	if testing.Short() {
		t.Skip("5M events")
	}
	for _, c := range []struct {
		delay int64
		want  string
	}{
		{5000, "results=503429 sum=5000000 dropped=0 checksum=fcd5f03e6c9e33d0"},
		{1000, "results=497639 sum=4872755 dropped=127245 checksum=d966362e39ab6e03"},
	} {
		if got := RunBaseline(DefaultN, c.delay).String(); got != c.want {
			t.Errorf("delay %d: %s, want %s", c.delay, got, c.want)
		}
	}
}

func TestWeirJobReferenceDigests(t *testing.T) {
	n := int64(DefaultN)
	if testing.Short() {
		n = 300_000
	}
	for _, delay := range []int64{5000, 1000} {
		want := RunBaseline(n, delay)
		for _, p := range []int{1, 2} {
			got, err := RunWeir(context.Background(), BenchConfig{N: n, DelayMs: delay, Parallelism: p})
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("delay %d p %d: weir %s, baseline %s", delay, p, got, want)
			}
		}
	}
}
