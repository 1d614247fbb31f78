package web

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// BenchmarkGetJob measures one GET /v1/job answer (counters read, rates,
// JSON) for a graph of 20 operators at parallelism 8: what a dashboard
// polling once a second costs the job's process.
func BenchmarkGetJob(b *testing.B) {
	reg := metrics.NewRegistry("bench")
	j := Job{Name: "bench", State: StateRunning, Start: time.Unix(1000, 0), Parallelism: 8}
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("op-%d", i)
		j.Operators = append(j.Operators, Operator{ID: i, Name: name, Parallelism: 8, SideOutputOf: -1})
		if i > 0 {
			j.Edges = append(j.Edges, Edge{From: i - 1, To: i, Kind: "hash"})
		}
		for s := 0; s < 8; s++ {
			o := reg.Operator(name, s)
			o.RecordsIn.Add(int64(1000 * s))
			o.Watermark.Store(123456)
		}
	}
	now := time.Unix(2000, 0)
	s := &Server{cfg: Config{Registry: reg, Job: func() Job { return j }, Now: func() time.Time { return now }}, rates: newSampler(10 * time.Second)}
	s.rates.add(take(reg, now.Add(-5*time.Second), nil))
	r := httptest.NewRequest("GET", "/v1/job", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.getJob(w, r)
	}
}
