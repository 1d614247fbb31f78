package metrics

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestLoopbackDefault(t *testing.T) {
	for in, want := range map[string]string{
		":9249":        "127.0.0.1:9249",
		"9249":         "127.0.0.1:9249",
		"0.0.0.0:9249": "0.0.0.0:9249",
		"[::1]:1":      "[::1]:1",
	} {
		if got := LoopbackDefault(in); got != want {
			t.Errorf("LoopbackDefault(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestServeExposesCounters(t *testing.T) {
	reg := NewRegistry("j")
	reg.Now = func() time.Time { return time.UnixMilli(4234) }
	o := reg.Operator("window", 1)
	o.RecordsIn.Add(7)
	o.LateDropped.Add(3)
	o.Watermark.Store(1234)
	s, err := Serve(":0", reg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Fatalf("metrics listen on %s, want loopback", s.Addr())
	}
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`weir_records_in_total{job="j",operator="window",subtask="1"} 7`,
		`late_records_dropped_total{job="j",operator="window",subtask="1"} 3`,
		`weir_watermark_ms{job="j",operator="window",subtask="1"} 1234`,
		`weir_watermark_lag_seconds{job="j",operator="window",subtask="1"} 3`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("missing %q in:\n%s", want, body)
		}
	}
}
