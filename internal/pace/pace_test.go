package pace

import (
	"context"
	"testing"
	"time"
)

func TestUnlimited(t *testing.T) {
	p := New(0)
	if n, err := p.Allow(context.Background(), 100); n != 100 || err != nil {
		t.Fatalf("unlimited pacer allowed %d, %v", n, err)
	}
}

// A pacer never allows more than rate × elapsed records.
func TestNeverAhead(t *testing.T) {
	p := New(1000)
	total := 0
	start := time.Now()
	for total < 100 {
		n, err := p.Allow(context.Background(), 50)
		if err != nil {
			t.Fatal(err)
		}
		p.Emitted(n)
		total += n
		if limit := int(time.Since(start).Seconds()*1000) + 1; total > limit {
			t.Fatalf("%d records allowed after %v at 1000/s", total, time.Since(start))
		}
	}
}

func TestCancel(t *testing.T) {
	p := New(0.001)
	p.Emitted(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Allow(ctx, 1); err == nil {
		t.Fatal("a cancelled wait must return the cause")
	}
}
