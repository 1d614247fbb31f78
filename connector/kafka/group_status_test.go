package kafka_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// ownedJob is a group-mode job run in the test process with its metrics
// endpoint and web server on free loopback ports.
type ownedJob struct {
	metricsURL, webURL, token string
}

var (
	metricsLine = regexp.MustCompile(`msg="metrics listening" addr=(http://\S+/metrics)`)
	webLine     = regexp.MustCompile(`msg="web dashboard listening" url=(http://\S+)/ token_file=(\S+)`)
)

func startOwnedJob(t *testing.T, addrs []string, appID string) *ownedJob {
	t.Helper()
	log := &weirtest.LockedBuffer{}
	tokenFile := filepath.Join(t.TempDir(), "web.token")
	job := weir.NewJob("group-owned", weir.AppID(appID), weir.Parallelism(2), weir.Checkpointing(20*time.Millisecond, ""),
		weir.MetricsAddr(":0"), weir.WebAddr(":0"), weir.WebTokenFile(tokenFile),
		weir.Logger(slog.New(slog.NewTextHandler(log, nil))))
	src := weir.FromSource(job, "in", kafka.Source(addrs, []string{"in"}, decodeEvent,
		kafka.ClientOptions(kgo.SessionTimeout(6*time.Second), kgo.RebalanceTimeout(6*time.Second))),
		weir.MonotonousTimestamps(func(e event) time.Time { return time.UnixMilli(e.TS) }))
	weir.To(src, kafka.Sink(addrs, func(e event, r *kgo.Record) error {
		r.Value = encodeEvent(e)
		return nil
	}, kafka.DefaultTopic("out")))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	j := &ownedJob{}
	waitFor(t, "the servers' log lines", 30*time.Second, func() bool {
		m, w := metricsLine.FindStringSubmatch(log.String()), webLine.FindStringSubmatch(log.String())
		if m != nil && w != nil {
			j.metricsURL, j.webURL = m[1], w[1]
			return true
		}
		return false
	})
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	j.token = strings.TrimSpace(string(tok))
	return j
}

var seriesLine = regexp.MustCompile(`^(weir_group_\w+)\{([^}]*)\} (\S+)$`)
var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// series is one scraped sample.
type series struct {
	labels map[string]string
	value  float64
}

// scrapeGroup reads the weir_group_* samples of the metrics endpoint.
func (j *ownedJob) scrapeGroup(t *testing.T) map[string][]series {
	t.Helper()
	resp, err := http.Get(j.metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", j.metricsURL, resp.Status, body)
	}
	out := map[string][]series{}
	for _, line := range strings.Split(string(body), "\n") {
		m := seriesLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		s := series{labels: map[string]string{}, value: v}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = p[2]
		}
		out[m[1]] = append(out[m[1]], s)
	}
	return out
}

// owned is the set of "topic/partition" the owned-partitions gauge shows.
func owned(m map[string][]series) map[string]bool {
	out := map[string]bool{}
	for _, s := range m["weir_group_owned_partitions"] {
		if s.value == 1 {
			out[s.labels["topic"]+"/"+s.labels["partition"]] = true
		}
	}
	return out
}

// perPartition is a gauge by "topic/partition".
func perPartition(m map[string][]series, name string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m[name] {
		out[s.labels["topic"]+"/"+s.labels["partition"]] = s.value
	}
	return out
}

// TestGroupOwnedPartitionsMetrics: a group-mode job in the test process
// shows what it owns in its metrics and on its web API: first all four
// partitions of the input, committed to their ends with no lag, its
// member id and generation; then, once a second process of the app joins,
// the two share the partitions (each shows only its own, together all
// four, none twice) and the first counts the rebalance.
func TestGroupOwnedPartitionsMetrics(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(4, "in"), seedTopics(2, "out"))
	evs := events(2000, 10)
	produce(t, addrs, "in", 4, evs)
	a := startOwnedJob(t, addrs, "owned")

	all := map[string]bool{"in/0": true, "in/1": true, "in/2": true, "in/3": true}
	var m map[string][]series
	waitFor(t, "four owned partitions committed to their ends", time.Minute, func() bool {
		m = a.scrapeGroup(t)
		if len(owned(m)) != 4 {
			return false
		}
		committed, lag := perPartition(m, "weir_group_committed_offset"), perPartition(m, "weir_group_lag_records")
		for p := range all {
			if !owned(m)[p] || committed[p] != float64(len(evs)/4) {
				return false
			}
			if l, ok := lag[p]; !ok || l != 0 {
				return false
			}
		}
		return true
	})
	info := m["weir_group_member_info"]
	if len(info) != 1 || info[0].labels["app_id"] != "owned" || !strings.HasPrefix(info[0].labels["member_id"], "owned-") {
		t.Fatalf("weir_group_member_info: %+v", info)
	}
	gen := m["weir_group_generation"]
	if len(gen) != 1 || gen[0].value < 1 {
		t.Fatalf("weir_group_generation: %+v", gen)
	}
	reb := m["weir_group_rebalances_total"]
	if len(reb) != 1 || reb[0].value < 1 {
		t.Fatalf("weir_group_rebalances_total: %+v", reb)
	}
	since := perPartition(m, "weir_group_partition_assigned_timestamp_seconds")
	for p := range all {
		if since[p] <= 0 || since[p] > float64(time.Now().Unix()+1) {
			t.Fatalf("assigned time of %s: %v", p, since[p])
		}
	}

	// The web API shows the same (behind the token).
	g := a.webGroup(t)
	if g.AppID != "owned" || g.MemberID != info[0].labels["member_id"] || len(g.Partitions) != 4 {
		t.Fatalf("GET /v1/job group: %+v", g)
	}
	for _, p := range g.Partitions {
		if p.Topic != "in" || p.Committed == nil || *p.Committed != int64(len(evs)/4) || p.Lag == nil || *p.Lag != 0 {
			t.Fatalf("GET /v1/job group partition: %+v", p)
		}
	}

	// A second process of the app: the partitions are shared.
	firstRebalances := reb[0].value
	b := startOwnedJob(t, addrs, "owned")
	waitFor(t, "the partitions shared by the two processes", time.Minute, func() bool {
		ma, mb := a.scrapeGroup(t), b.scrapeGroup(t)
		oa, ob := owned(ma), owned(mb)
		if len(oa) == 0 || len(ob) == 0 || len(oa)+len(ob) != 4 {
			return false
		}
		for p := range all {
			if oa[p] == ob[p] {
				return false
			}
		}
		m = ma
		return true
	})
	if r := m["weir_group_rebalances_total"]; len(r) != 1 || r[0].value <= firstRebalances {
		t.Fatalf("weir_group_rebalances_total after a member joined: %+v, was %v", r, firstRebalances)
	}
}

type groupJSON struct {
	AppID      string `json:"app_id"`
	MemberID   string `json:"member_id"`
	Generation int32  `json:"generation"`
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Committed *int64 `json:"committed"`
		Lag       *int64 `json:"lag"`
	} `json:"partitions"`
}

func (j *ownedJob) webGroup(t *testing.T) groupJSON {
	t.Helper()
	req, _ := http.NewRequest("GET", j.webURL+"/v1/job", nil)
	req.Header.Set("Authorization", "Bearer "+j.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Group *groupJSON `json:"group"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK || body.Group == nil {
		t.Fatalf("GET /v1/job: %s, %v, group %v", resp.Status, err, body.Group)
	}
	return *body.Group
}
