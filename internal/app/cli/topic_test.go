package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// runTopic runs one of the log commands under a bare root (root.go wires
// them into the real one).
func runTopic(ctx context.Context, stdin string, stdout *syncBuffer, args ...string) error {
	root := &cobra.Command{Use: "weir", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newTopicCommands()...)
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(stdout)
	root.SetErr(stdout)
	return root.ExecuteContext(ctx)
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

func topicCmd(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	var out syncBuffer
	if err := runTopic(context.Background(), stdin, &out, args...); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out.String()
}

func TestTopicCommands(t *testing.T) {
	dd := "--data-dir=" + t.TempDir()
	if got := topicCmd(t, "", "topic", "create", "orders", "--partitions", "2", dd); got != "created topic orders with 2 partitions\n" {
		t.Fatalf("create: %q", got)
	}
	topicCmd(t, "", "topic", "create", "changes", "--compact", dd)
	if got := topicCmd(t, "", "topic", "list", dd); got != "changes\norders\n" {
		t.Fatalf("list: %q", got)
	}
	topicCmd(t, "a\nb\nc\n", "produce", "orders", "--partition", "0", "--timestamp", "2025-01-01T00:00:00Z", dd)
	topicCmd(t, "d\ne\n", "produce", "orders", "--partition", "0", "--timestamp", "1735693200000", dd) // 01:00
	topicCmd(t, `{"id":"x","n":1}`+"\n"+`{"id":7}`+"\n", "produce", "orders", "--key-field", "id", dd)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--partition", "0"}, "a\nb\nc\nd\ne\n"},
		{[]string{"--partition", "0", "--from", "3"}, "d\ne\n"},
		{[]string{"--partition", "0", "--from", "2025-01-01T00:30:00Z"}, "d\ne\n"},
		{[]string{"--partition", "0", "--from", "latest"}, ""},
		{[]string{"--partition", "0", "--max", "2"}, "a\nb\n"},
	} {
		if got := topicCmd(t, "", append([]string{"consume", "orders", dd}, tc.args...)...); got != tc.want {
			t.Errorf("consume %v: %q, want %q", tc.args, got, tc.want)
		}
	}
	// All partitions: the keyed JSON lines went to partitions by hash.
	all := topicCmd(t, "", "consume", "orders", dd)
	for _, v := range []string{"a", "e", `{"id":"x","n":1}`, `{"id":7}`} {
		if !strings.Contains(all, v+"\n") {
			t.Errorf("consume all partitions lacks %s: %q", v, all)
		}
	}
	desc := topicCmd(t, "", "topic", "describe", "orders", dd)
	if !strings.Contains(desc, "topic orders: partitions=2 compact=false") || !strings.Contains(desc, "partition 0: earliest=0 next=") {
		t.Errorf("describe: %q", desc)
	}
	if got := topicCmd(t, "", "topic", "delete", "changes", dd); got != "deleted topic changes\n" {
		t.Fatalf("delete: %q", got)
	}
	if got := topicCmd(t, "", "topic", "list", dd); got != "orders\n" {
		t.Fatalf("list after delete: %q", got)
	}
	var out syncBuffer
	if err := runTopic(context.Background(), "", &out, "consume", "nope", dd); !errors.Is(err, wlog.ErrNoTopic) {
		t.Fatalf("missing topic: %v", err)
	}
	if err := runTopic(context.Background(), "", &out, "consume", "orders", "--from", "yesterday", dd); err == nil {
		t.Fatal("bad --from accepted")
	}
}

func TestProduceRefusedWhileLocked(t *testing.T) {
	dir := t.TempDir()
	tp, err := wlog.CreateTopic(dir, "t", wlog.TopicConfig{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := tp.OpenWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var out syncBuffer
	err = runTopic(context.Background(), "x\n", &out, "produce", "t", "--data-dir", dir)
	if !errors.Is(err, wlog.ErrLocked) || !strings.Contains(err.Error(), "partition 0") {
		t.Fatalf("produce with a writer: %v", err)
	}
}

func TestConsumeFollow(t *testing.T) {
	dd := "--data-dir=" + t.TempDir()
	topicCmd(t, "", "topic", "create", "t", dd)
	topicCmd(t, "one\n", "produce", "t", dd)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	errc := make(chan error, 1)
	go func() { errc <- runTopic(ctx, "", &out, "consume", "t", "--follow", "--poll", "1ms", dd) }()
	waitOutput := func(want string) {
		t.Helper()
		if !weirtest.Poll(30*time.Second, func() bool { return out.String() == want }) {
			t.Fatalf("output %q, want %q", out.String(), want)
		}
	}
	waitOutput("one\n")
	topicCmd(t, "two\nthree\n", "produce", "t", dd)
	waitOutput("one\ntwo\nthree\n")
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("follow ended with %v", err)
	}
}
