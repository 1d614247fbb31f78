package metrics

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

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

func get(t *testing.T, url, host, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// On loopback the metrics need no token, but the Host must name the
// loopback address: a page whose name was rebound to 127.0.0.1 is refused.
func TestServeChecksHost(t *testing.T) {
	s, err := Serve("127.0.0.1:0", NewRegistry("j"), "a-token-that-loopback-ignores")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.NeedsToken() {
		t.Fatal("metrics on loopback ask for a token")
	}
	url := "http://" + s.Addr() + "/metrics"
	if code := get(t, url, "", ""); code != 200 {
		t.Fatalf("GET /metrics on loopback: %d", code)
	}
	if code := get(t, url, "localhost", ""); code != 200 {
		t.Fatalf("GET /metrics as localhost: %d", code)
	}
	if code := get(t, url, "rebound.example:9249", ""); code != 403 {
		t.Fatalf("GET /metrics with a foreign Host: %d, want 403", code)
	}
}

// Off loopback the metrics need the job's token; without one to give,
// Serve refuses to start.
func TestServeOffLoopbackNeedsToken(t *testing.T) {
	if _, err := Serve("0.0.0.0:0", NewRegistry("j"), ""); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("Serve on 0.0.0.0 without a token: %v", err)
	}
	s, err := Serve("0.0.0.0:0", NewRegistry("j"), "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, port, _ := net.SplitHostPort(s.Addr())
	url := "http://127.0.0.1:" + port + "/metrics"
	if code := get(t, url, "", ""); code != 401 {
		t.Fatalf("GET /metrics off loopback without the token: %d, want 401", code)
	}
	if code := get(t, url, "", "tok"); code != 200 {
		t.Fatalf("GET /metrics off loopback with the token: %d", code)
	}
}
