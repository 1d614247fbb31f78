package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testing/weirtest"
)

// Every command that runs a job takes --web-addr and --web-token-file.
func TestDemoWebFlags(t *testing.T) {
	for _, args := range [][]string{{"demo", "adclicks"}, {"demo", "fraud"}, {"demo", "cdc"}, {"sql"}, {"nexmark", "run"}} {
		out, _, code := run(t, append(args, "--help")...)
		if code != 0 || !strings.Contains(out, "--web-addr string") || !strings.Contains(out, "--web-token-file string") {
			t.Errorf("weir %s --help: exit %d, no --web-addr/--web-token-file:\n%s", strings.Join(args, " "), code, out)
		}
	}
}

var dashboardLine = regexp.MustCompile(`msg="web dashboard listening" url=http://(127\.0\.0\.1:\d+)/ token_file=(\S+)`)

// dashboardAddr waits for a command's log line announcing its dashboard
// with tokenFile, and returns the address it listens on.
func dashboardAddr(t *testing.T, stderr *syncBuffer, tokenFile string) string {
	t.Helper()
	var addr string
	weirtest.WaitFor(t, "the dashboard's log line", 60*time.Second, func() bool {
		m := dashboardLine.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil && m[2] == tokenFile
	})
	return addr
}

// getJob is GET /v1/job with the token auth ("" for none).
func getJob(t *testing.T, addr, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/job", nil)
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The check: a demo with --web-addr :PORT --web-token-file F
// writes F with mode 0600, listens on loopback, logs where (not the
// token), and answers /v1/job with the operators only with the token.
func TestDemoWebServer(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "web.token")
	var out, errb syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"demo", "adclicks", "--source", "generator", "--quiet", "--events", "50000000", "--rate", "20000",
			"--data-dir", t.TempDir(), "--web-addr", ":0", "--web-token-file", tokenFile}, &out, &errb)
	}()
	defer func() {
		cancel()
		<-done
	}()
	addr := dashboardAddr(t, &errb, tokenFile)
	fi, err := os.Stat(tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}
	b, _ := os.ReadFile(tokenFile)
	token := strings.TrimSpace(string(b))
	if strings.Contains(errb.String(), token) {
		t.Fatal("the token is in the log")
	}
	get := func(auth string) (int, string) { return getJob(t, addr, auth) }
	for _, bad := range []string{"", strings.Repeat("f", len(token))} {
		if code, _ := get(bad); code != 401 {
			t.Fatalf("token %q: %d, want 401", bad, code)
		}
	}
	code, body := get(token)
	var job struct {
		Operators []struct{ Name string } `json:"operators"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &job) != nil {
		t.Fatalf("%d %s", code, body)
	}
	var names []string
	for _, o := range job.Operators {
		names = append(names, o.Name)
	}
	if got := strings.Join(names, ","); got != "clicks,count-per-minute,print" {
		t.Fatalf("operators %s", got)
	}
}

// TestSQLWebServer: `weir sql -f FILE --web-addr` serves the SQL job's graph
// behind the token, like the demos.
func TestSQLWebServer(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "web.token")
	file := filepath.Join(dir, "job.sql")
	script := `CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '2000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '100000000');
CREATE TABLE out (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT id FROM gen WHERE MOD(id, 2) = 0;
`
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	var eb syncBuffer
	if code := Run(context.Background(), []string{"sql", "-f", file, "--web-addr", ":0"}, io.Discard, &eb); code == 0 ||
		!strings.Contains(eb.String(), "--web-token-file") {
		t.Fatalf("--web-addr without a place for the token: exit %d, %s", code, eb.String())
	}
	var out, errb syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"sql", "-f", file, "--web-addr", ":0", "--web-token-file", tokenFile}, &out, &errb)
	}()
	defer func() {
		cancel()
		<-done
	}()
	addr := dashboardAddr(t, &errb, tokenFile)
	b, _ := os.ReadFile(tokenFile)
	token := strings.TrimSpace(string(b))
	get := func(auth string) (int, string) { return getJob(t, addr, auth) }
	if code, _ := get(""); code != 401 {
		t.Fatalf("no token: %d, want 401", code)
	}
	weirtest.WaitFor(t, "the SQL job's operators with records in", 60*time.Second, func() bool {
		code, body := get(token)
		var job struct {
			Operators []struct {
				Name      string `json:"name"`
				RecordsIn int64  `json:"records_in"`
			} `json:"operators"`
		}
		if code != 200 || json.Unmarshal([]byte(body), &job) != nil || len(job.Operators) < 2 {
			return false
		}
		var in int64
		for _, o := range job.Operators {
			in += o.RecordsIn
		}
		return in > 0
	})
}
