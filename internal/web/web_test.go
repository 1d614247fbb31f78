package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/internal/web"
)

// click is the demo-like job's record.
type click struct {
	Ad string
	TS int64
}

// operators of the demo-like job, as the dashboard must name them.
var operators = []string{"clicks", "valid-clicks", "count-per-second", "print"}

// running is a demo-like job run in the background: an unbounded, paced
// source, a filter chained to it, a keyed window and a sink.
type running struct {
	job       *weir.Job
	addr      string // the web server's
	token     string
	tokenFile string
	ckDir     string
	log       *syncBuffer
	done      chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listening = regexp.MustCompile(`msg="web dashboard listening" url=http://([^/]+)/ token_file=(\S+)`)

// start runs the demo-like job with the web server on a free loopback
// port and waits until it answers. ckpt: with checkpointing (and so
// savepoints).
func start(t *testing.T, ckpt bool, opts ...weir.JobOption) *running {
	t.Helper()
	return startJob(t, ckpt, demoJob, opts...)
}

// demoJob builds the demo-like job: clicks, valid-clicks,
// count-per-second, print.
func demoJob(j *weir.Job) {
	src := weir.FromSource(j, "clicks", weir.GeneratorSource(weir.GeneratorConfig{Count: -1, Seed: 1, Rate: 5000},
		func(i int64, rng *rand.Rand) click {
			return click{Ad: fmt.Sprintf("ad-%d", rng.IntN(20)), TS: 1_700_000_000_000 + i}
		}), weir.BoundedOutOfOrderness(100*time.Millisecond, func(c click) time.Time { return time.UnixMilli(c.TS) }), weir.Parallelism(1))
	valid := weir.Filter(src, func(c click) bool { return c.Ad != "" }, weir.Name("valid-clicks"))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(valid, func(c click) string { return c.Ad }), weir.Tumbling(time.Second)),
		weir.Count[click](), weir.Name("count-per-second"))
	weir.To(counts, weir.SinkFunc[weir.WindowResult[string, int64]](func(context.Context, []weir.WindowResult[string, int64]) error { return nil }),
		weir.Name("print"), weir.Parallelism(1))
}

// startJob is start with the job's operators built by build.
func startJob(t *testing.T, ckpt bool, build func(*weir.Job), opts ...weir.JobOption) *running {
	t.Helper()
	r := &running{log: &syncBuffer{}, done: make(chan error, 1)}
	r.tokenFile = filepath.Join(t.TempDir(), "web.token")
	opts = append([]weir.JobOption{weir.Parallelism(2), weir.WebAddr(":0"), weir.WebTokenFile(r.tokenFile),
		weir.Logger(slog.New(slog.NewTextHandler(r.log, nil)))}, opts...)
	if ckpt {
		r.ckDir = t.TempDir()
		opts = append(opts, weir.Checkpointing(50*time.Millisecond, r.ckDir))
	}
	r.job = weir.NewJob("web-test", opts...)
	build(r.job)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- r.job.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	weirtest.WaitFor(t, "the web server's log line", 30*time.Second, func() bool {
		m := listening.FindStringSubmatch(r.log.String())
		if m != nil {
			r.addr = m[1]
		}
		return m != nil
	})
	tok, err := os.ReadFile(r.tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	r.token = strings.TrimSpace(string(tok))
	return r
}

type req struct {
	method, path, body string
	header             map[string]string
	host               string
	cookie             string
}

// do sends q to the running job's server over real HTTP, without
// following redirects.
func (r *running) do(t *testing.T, q req) (*http.Response, []byte) {
	t.Helper()
	method := q.method
	if method == "" {
		method = "GET"
	}
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
	}
	hr, err := http.NewRequest(method, "http://"+r.addr+q.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range q.header {
		hr.Header.Set(k, v)
	}
	if q.host != "" {
		hr.Host = q.host
	}
	if q.cookie != "" {
		hr.AddCookie(&http.Cookie{Name: "weir_token", Value: q.cookie})
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (r *running) bearer() map[string]string {
	return map[string]string{"Authorization": "Bearer " + r.token}
}

// Every access rule, over real HTTP against a running job: the token (as
// a header or the login's cookie) on everything but /login, the Host,
// the Origin of a POST, JSON-only bodies, confined savepoint paths.
func TestAuthRules(t *testing.T) {
	r := start(t, true)
	if fi, err := os.Stat(r.tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v: want mode 0600", fi, err)
	}
	if strings.Contains(r.log.String(), r.token) {
		t.Fatalf("the token is in the log:\n%s", r.log)
	}
	if host, _, _ := net.SplitHostPort(r.addr); host != "127.0.0.1" {
		t.Fatalf("WebAddr(\":0\") listens on %s, want loopback", r.addr)
	}
	tok := r.token
	wrong := strings.Repeat("0", len(tok))
	auth := r.bearer()
	withAuth := func(kv ...string) map[string]string {
		h := map[string]string{"Authorization": "Bearer " + tok}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	for _, c := range []struct {
		name string
		q    req
		want int
		// noJob: the answer must name none of the job's operators
		noJob bool
	}{
		{name: "job without token", q: req{path: "/v1/job"}, want: 401, noJob: true},
		{name: "job with a wrong token", q: req{path: "/v1/job", header: map[string]string{"Authorization": "Bearer " + wrong}}, want: 401, noJob: true},
		{name: "job with a token prefix", q: req{path: "/v1/job", header: map[string]string{"Authorization": "Bearer " + tok[:len(tok)-1]}}, want: 401, noJob: true},
		{name: "job with the token", q: req{path: "/v1/job", header: auth}, want: 200},
		{name: "job with the cookie", q: req{path: "/v1/job", cookie: tok}, want: 200},
		{name: "job with a wrong cookie", q: req{path: "/v1/job", cookie: wrong}, want: 401, noJob: true},
		{name: "checkpoints without token", q: req{path: "/v1/checkpoints"}, want: 401, noJob: true},
		{name: "checkpoints with the token", q: req{path: "/v1/checkpoints", header: auth}, want: 200},
		{name: "dashboard without token", q: req{path: "/"}, want: 401, noJob: true},
		{name: "dashboard with a wrong cookie", q: req{path: "/", cookie: wrong}, want: 401, noJob: true},
		{name: "dashboard with the cookie", q: req{path: "/", cookie: tok}, want: 200},
		{name: "script without token", q: req{path: "/static/app.js"}, want: 401, noJob: true},
		{name: "script with the cookie", q: req{path: "/static/app.js", cookie: tok}, want: 200},
		{name: "status (control alias) without token", q: req{path: "/v1/status"}, want: 401, noJob: true},
		{name: "login without token", q: req{path: "/login"}, want: 401, noJob: true},
		{name: "login with a wrong token", q: req{path: "/login?token=" + wrong}, want: 401, noJob: true},
		{name: "login with the token", q: req{path: "/login?token=" + tok}, want: 303, noJob: true},
		{name: "login from a rebound name", q: req{path: "/login?token=" + tok, host: "rebound.example:80"}, want: 403, noJob: true},
		{name: "Host mismatch (DNS rebinding)", q: req{path: "/v1/job", header: auth, host: "rebound.example"}, want: 403, noJob: true},
		{name: "Host another address", q: req{path: "/v1/job", header: auth, host: "10.1.2.3:80"}, want: 403, noJob: true},
		{name: "Host localhost", q: req{path: "/v1/job", header: auth, host: "localhost"}, want: 200},
		{name: "savepoint without token", q: req{method: "POST", path: "/v1/savepoints"}, want: 401},
		{name: "stop without token", q: req{method: "POST", path: "/v1/stop"}, want: 401},
		{name: "savepoint, foreign Origin", q: req{method: "POST", path: "/v1/savepoints", header: withAuth("Origin", "http://evil.example")}, want: 403},
		{name: "savepoint, foreign Origin with the cookie", q: req{method: "POST", path: "/v1/savepoints", cookie: tok, header: map[string]string{"Origin": "http://evil.example"}}, want: 403},
		{name: "stop, foreign Origin", q: req{method: "POST", path: "/v1/stop", header: withAuth("Origin", "http://evil.example")}, want: 403},
		{name: "stop, null Origin", q: req{method: "POST", path: "/v1/stop", header: withAuth("Origin", "null")}, want: 403},
		{name: "stop, cross-site fetch", q: req{method: "POST", path: "/v1/stop", header: withAuth("Sec-Fetch-Site", "cross-site")}, want: 403},
		{name: "control alias, foreign Origin", q: req{method: "POST", path: "/v1/savepoint", body: `{"path":"x"}`, header: withAuth("Origin", "http://evil.example", "Content-Type", "application/json")}, want: 403},
		{name: "stop, text/plain body", q: req{method: "POST", path: "/v1/stop", body: `{}`, header: withAuth("Content-Type", "text/plain")}, want: 415},
		{name: "stop, form body", q: req{method: "POST", path: "/v1/stop", body: `path=x`, header: withAuth("Content-Type", "application/x-www-form-urlencoded")}, want: 415},
		{name: "stop, unknown field", q: req{method: "POST", path: "/v1/stop", body: `{"force":true}`, header: withAuth("Content-Type", "application/json")}, want: 400},
		{name: "stop, path with ..", q: req{method: "POST", path: "/v1/stop", body: `{"path":"../x"}`, header: withAuth("Content-Type", "application/json")}, want: 403},
		{name: "stop, absolute path outside", q: req{method: "POST", path: "/v1/stop", body: `{"path":"/etc/x"}`, header: withAuth("Content-Type", "application/json")}, want: 403},
		{name: "GET of a POST route", q: req{path: "/v1/stop", header: auth}, want: 405},
		{name: "unknown API", q: req{path: "/v1/nothing", header: auth}, want: 404},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := r.do(t, c.q)
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.want, body)
			}
			if c.noJob {
				for _, op := range append(operators, "web-test") {
					if bytes.Contains(body, []byte(op)) {
						t.Fatalf("a refused answer names %q:\n%s", op, body)
					}
				}
			}
			if strings.HasPrefix(c.q.path, "/v1/") && resp.StatusCode != 200 {
				var e struct{ Error string }
				if err := jsonUnmarshal(body, &e); err != nil || e.Error == "" {
					t.Fatalf("API refusal without a JSON error: %s", body)
				}
			}
			if resp.StatusCode == 401 && !strings.HasPrefix(c.q.path, "/v1/") && !strings.Contains(string(body), "/login") {
				t.Fatalf("a refused page does not point to /login:\n%s", body)
			}
			if resp.StatusCode == 303 {
				var ck *http.Cookie
				for _, x := range resp.Cookies() {
					if x.Name == "weir_token" {
						ck = x
					}
				}
				if ck == nil || ck.Value != tok || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || resp.Header.Get("Location") != "/" ||
					ck.MaxAge <= 0 {
					t.Fatalf("login: cookie %+v, Location %q", ck, resp.Header.Get("Location"))
				}
			}
		})
	}
	// Nothing was written outside, nor in, the savepoint directory by the
	// refused requests.
	if des, err := os.ReadDir(filepath.Join(r.ckDir, "savepoints")); err == nil && len(des) > 0 {
		t.Fatalf("refused requests left %v in the savepoint directory", des)
	}
	if err := r.job.Run(context.Background()); err == nil {
		t.Fatal("a second Run")
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func (r *running) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, body := r.do(t, req{path: path, header: r.bearer()})
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

func recordsIn(j *web.JobJSON, name string) int64 {
	for _, o := range j.Operators {
		if o.Name == name {
			return o.RecordsIn
		}
	}
	return -1
}

// GET /v1/job of a running job: every operator with its parallelism,
// the edges with their kinds, live counters (records_in grows between two
// calls), a rate once the sampler has two samples, one watermark per
// subtask.
func TestJobAPI(t *testing.T) {
	r := start(t, false)
	var first, second web.JobJSON
	r.getJSON(t, "/v1/job", &first)
	if first.Name != "web-test" || first.State != web.StateRunning || first.StartTime == nil || first.Parallelism != 2 {
		t.Fatalf("job: %+v", first)
	}
	var names []string
	for _, o := range first.Operators {
		names = append(names, o.Name)
		if len(o.WatermarkMs) != o.Parallelism || len(o.WatermarkLagMs) != o.Parallelism {
			t.Errorf("%s: %d watermarks, %d lags for parallelism %d", o.Name, len(o.WatermarkMs), len(o.WatermarkLagMs), o.Parallelism)
		}
	}
	if strings.Join(names, ",") != strings.Join(operators, ",") {
		t.Fatalf("operators %v, want %v", names, operators)
	}
	wantPar := map[string]int{"clicks": 1, "valid-clicks": 1, "count-per-second": 2, "print": 1}
	for _, o := range first.Operators {
		if o.Parallelism != wantPar[o.Name] {
			t.Errorf("%s: parallelism %d, want %d", o.Name, o.Parallelism, wantPar[o.Name])
		}
	}
	wantEdges := []web.EdgeJSON{{From: 0, To: 1, Kind: "forward", Chained: true}, {From: 1, To: 2, Kind: "hash"}, {From: 2, To: 3, Kind: "rebalance"}}
	if fmt.Sprint(first.Edges) != fmt.Sprint(wantEdges) {
		t.Fatalf("edges %v, want %v", first.Edges, wantEdges)
	}
	weirtest.WaitFor(t, "records_in of the window to grow between two calls", 30*time.Second, func() bool {
		r.getJSON(t, "/v1/job", &second)
		return recordsIn(&second, "count-per-second") > max(recordsIn(&first, "count-per-second"), 0)
	})
	weirtest.WaitFor(t, "a rate and a watermark", 30*time.Second, func() bool {
		r.getJSON(t, "/v1/job", &second)
		w := second.Operators[2]
		return second.Operators[0].RecordsPerSec > 0 && w.RecordsPerSec > 0 && w.WatermarkMs[0] != nil && w.WatermarkMs[1] != nil
	})
	for _, o := range second.Operators {
		if o.BackpressureRatio < 0 || o.BackpressureRatio > 1 || o.Backpressure == "" {
			t.Errorf("%s: backpressure %v %q", o.Name, o.BackpressureRatio, o.Backpressure)
		}
	}
	// Without checkpointing there are no savepoints: a clear refusal.
	resp, body := r.do(t, req{method: "POST", path: "/v1/savepoints", header: r.bearer()})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "Checkpointing") {
		t.Fatalf("savepoint without checkpointing: %d %s", resp.StatusCode, body)
	}
}

// GET /v1/checkpoints shows the history as the coordinator records it;
// POST /v1/savepoints writes one into the savepoint directory (and the
// history says so); POST /v1/stop takes one and ends the job.
func TestCheckpointsAndSavepoints(t *testing.T) {
	r := start(t, true)
	var ck web.CheckpointsJSON
	weirtest.WaitFor(t, "two completed checkpoints in the history", 30*time.Second, func() bool {
		r.getJSON(t, "/v1/checkpoints", &ck)
		return ck.Counts.Completed >= 2 && len(ck.History) >= 2
	})
	h := ck.History[0]
	if h.Status != "COMPLETED" || h.ID < ck.History[1].ID || h.TriggerTime.IsZero() || h.DurationMs < 0 || h.SizeBytes <= 0 {
		t.Fatalf("newest checkpoint %+v (then %+v)", h, ck.History[1])
	}
	if ck.LatestRestored != nil {
		t.Fatalf("a fresh job restored %+v", ck.LatestRestored)
	}
	// The endpoint answers before the tasks run: until then, "not running".
	var sp web.SavepointJSON
	weirtest.WaitFor(t, "a savepoint", 30*time.Second, func() bool {
		resp, body := r.do(t, req{method: "POST", path: "/v1/savepoints", body: `{"path":"sp1"}`,
			header: map[string]string{"Authorization": "Bearer " + r.token, "Content-Type": "application/json", "Origin": "http://" + r.addr}})
		if resp.StatusCode == 409 && strings.Contains(string(body), "not running") {
			return false
		}
		if resp.StatusCode != 200 {
			t.Fatalf("savepoint: %d %s", resp.StatusCode, body)
		}
		return json.Unmarshal(body, &sp) == nil
	})
	root, _ := filepath.EvalSymlinks(filepath.Join(r.ckDir, "savepoints"))
	if sp.Path != filepath.Join(root, "sp1") {
		t.Fatalf("savepoint at %q, want under %s", sp.Path, root)
	}
	if _, err := os.Stat(sp.Path); err != nil {
		t.Fatal(err)
	}
	r.getJSON(t, "/v1/checkpoints", &ck)
	found := false
	for _, h := range ck.History {
		found = found || h.Savepoint && h.Status == "COMPLETED"
	}
	if !found {
		t.Fatalf("the savepoint is not in the history: %+v", ck.History)
	}
	// The old control route and `weir savepoint`'s client work against
	// this server, found through the checkpoint directory.
	addr, tok, err := control.Endpoint(r.ckDir)
	if err != nil || addr != r.addr || tok != r.token {
		t.Fatalf("control.Endpoint: %q %v (server %s)", addr, err, r.addr)
	}
	if got, err := control.RequestSavepoint(context.Background(), addr, tok, "sp2", false); err != nil || got != filepath.Join(root, "sp2") {
		t.Fatalf("control client: %q, %v", got, err)
	}
	// Stop: no body, a name made from the time.
	resp, body := r.do(t, req{method: "POST", path: "/v1/stop", header: r.bearer()})
	if resp.StatusCode != 200 || json.Unmarshal(body, &sp) != nil || !strings.HasPrefix(filepath.Base(sp.Path), "savepoint-") {
		t.Fatalf("stop: %d %s", resp.StatusCode, body)
	}
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("Run after stop: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not stop")
	}
	if got := r.job.StoppedWithSavepoint(); got != sp.Path {
		t.Fatalf("StoppedWithSavepoint %q, want %q", got, sp.Path)
	}
	for _, f := range []string{r.tokenFile, filepath.Join(r.ckDir, control.AddrFile)} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s left after the job ended: %v", f, err)
		}
	}
}

// weir.Main programs take --web-addr and --web-token-file; ":PORT"
// listens on loopback. The restored checkpoint shows in
// /v1/checkpoints.
func TestMainFlags(t *testing.T) {
	ck := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "tok")
	build := func() *weir.Job {
		job := weir.NewJob("main-flags")
		src := weir.FromSource(job, "numbers", weir.GeneratorSource(weir.GeneratorConfig{Count: -1, Rate: 2000},
			func(i int64, _ *rand.Rand) int64 { return i }), weir.NoWatermarks[int64]())
		weir.To(src, weir.SinkFunc[int64](func(context.Context, []int64) error { return nil }), weir.Name("discard"))
		return job
	}
	run := func(wantRestore bool) {
		log := &syncBuffer{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- weir.MainArgs(ctx, build(), []string{"--web-addr", ":0", "--web-token-file", tokenFile,
				"--checkpoint-dir", ck, "--checkpoint-interval", "20ms"}, log)
		}()
		defer func() {
			cancel()
			<-done
		}()
		r := &running{log: log}
		weirtest.WaitFor(t, "the web server's log line", 30*time.Second, func() bool {
			m := listening.FindStringSubmatch(log.String())
			if m != nil {
				r.addr = m[1]
			}
			return m != nil && m[2] == tokenFile
		})
		if !strings.HasPrefix(r.addr, "127.0.0.1:") {
			t.Fatalf("listening on %s, want loopback", r.addr)
		}
		tok, _ := os.ReadFile(tokenFile)
		r.token = strings.TrimSpace(string(tok))
		var ckj web.CheckpointsJSON
		weirtest.WaitFor(t, "a completed checkpoint", 30*time.Second, func() bool {
			r.getJSON(t, "/v1/checkpoints", &ckj)
			return ckj.Counts.Completed > 0
		})
		if got := ckj.LatestRestored != nil; got != wantRestore {
			t.Fatalf("latest_restored %+v, want one: %v", ckj.LatestRestored, wantRestore)
		}
		if wantRestore && (ckj.LatestRestored.ID <= 0 || ckj.LatestRestored.Path == "") {
			t.Fatalf("latest_restored %+v", ckj.LatestRestored)
		}
	}
	run(false)
	run(true) // resumes from the first run's checkpoints
}

// A web server needs somewhere to put the token: without a token file,
// a checkpoint or a state directory, Run says so before starting.
func TestWebAddrNeedsTokenFile(t *testing.T) {
	job := weir.NewJob("no-token-file", weir.WebAddr(":0"))
	weir.To(weir.FromSource(job, "numbers", weir.GeneratorSource(weir.GeneratorConfig{Count: 10}, func(i int64, _ *rand.Rand) int64 { return i }),
		weir.NoWatermarks[int64]()), weir.SinkFunc[int64](func(context.Context, []int64) error { return nil }))
	err := job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "WebTokenFile") {
		t.Fatalf("Run: %v, want an error naming WebTokenFile", err)
	}
}
