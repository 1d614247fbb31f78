package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wlog "github.com/weirstream/weir/connector/log"
)

// The case: 16 bytes corrupted in the middle of a segment of
// 1,000 records. consume prints the records before the damage and fails
// naming it; produce refuses to append past it.
func TestConsumeCorruptSegmentFails(t *testing.T) {
	dir := t.TempDir()
	dd := "--data-dir=" + dir
	topicCmd(t, "", "topic", "create", "t", dd)
	var in strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&in, "record %d\n", i)
	}
	topicCmd(t, in.String(), "produce", "t", "--batch", "10", dd)
	seg := filepath.Join(dir, "t", "0", "00000000000000000000.log")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 5000; i < 5016; i++ {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	err = runTopic(context.Background(), "", &out, "consume", "t", dd)
	var ce *wlog.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("consume: %v, want a *CorruptError", err)
	}
	for _, want := range []string{"topic t", "partition 0", seg, fmt.Sprintf("offset %d", ce.Offset)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %q", err, want)
		}
	}
	if lines := strings.Count(out.String(), "\n"); int64(lines) != ce.Offset || lines == 0 {
		t.Errorf("printed %d lines before the damage at offset %d", lines, ce.Offset)
	}
	if err := runTopic(context.Background(), "more\n", &out, "produce", "t", dd); !errors.As(err, &ce) {
		t.Fatalf("produce after the damage: %v", err)
	}
	if b2, _ := os.ReadFile(seg); len(b2) != len(b) {
		t.Fatalf("produce changed the damaged segment")
	}
}

func TestTopicFlagLimits(t *testing.T) {
	dir := t.TempDir()
	dd := "--data-dir=" + dir
	topicCmd(t, "", "topic", "create", "t", "--partitions", "2", dd)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create", "big", "--partitions", "100000000"}, "10000"},
		{[]string{"topic", "create", "seg", "--segment-bytes", "3000000000"}, "2147483648"},
		{[]string{"topic", "create", "neg", "--retention", "-1h"}, "--retention -1h0m0s: must not be negative"},
		{[]string{"topic", "create", "-- -dash"}, "invalid topic name"},
		{[]string{"topic", "create", ".dot"}, "invalid topic name"},
		{[]string{"topic", "create", strings.Repeat("x", 240)}, "at most 227"},
		{[]string{"consume", "t", "--partition", "-2"}, "--partition -2: must not be negative"},
		{[]string{"consume", "t", "--partition", "2"}, "partitions 0 to 1"},
		{[]string{"consume", "t", "--max", "-1"}, "--max -1: must not be negative"},
		{[]string{"consume", "t", "--follow", "--poll", "-1s"}, "must not be negative"},
		{[]string{"produce", "t", "--partition", "-2"}, "must not be negative"},
		{[]string{"produce", "t", "--partition", "5"}, "partitions 0 to 1"},
		{[]string{"produce", "t", "--max-record-bytes", "0"}, "--max-record-bytes 0"},
	} {
		var out syncBuffer
		args := append(c.args, dd)
		if c.args[2] == "-- -dash" {
			args = []string{"topic", "create", dd, "--", "-dash"}
		}
		start := time.Now()
		err := runTopic(context.Background(), "", &out, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%v took %v", c.args, d)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left in the data dir: %v", ents)
	}
}

// A line longer than --max-record-bytes fails naming its line and the
// flag, before it is buffered whole; the lines before it are appended.
func TestProduceLineLimit(t *testing.T) {
	dd := "--data-dir=" + t.TempDir()
	topicCmd(t, "", "topic", "create", "t", dd)
	in := "a\nb\n" + strings.Repeat("x", 2000) + "\nc\n"
	var out syncBuffer
	err := runTopic(context.Background(), in, &out, "produce", "t", "--max-record-bytes", "1000", dd)
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "--max-record-bytes 1000") {
		t.Fatalf("got %v", err)
	}
	if got := topicCmd(t, "", "consume", "t", dd); got != "a\nb\n" {
		t.Fatalf("consumed %q, want the two lines before the long one", got)
	}
	// At the limit is fine.
	topicCmd(t, strings.Repeat("y", 1000)+"\n", "produce", "t", "--max-record-bytes", "1000", dd)
}

// Negative numbers and durations are refused by every command before it
// does anything (a negative --out-of-orderness would keep the watermark
// from ever advancing).
func TestNegativeFlagsRefused(t *testing.T) {
	dd := "--data-dir=" + t.TempDir()
	for _, args := range [][]string{
		{"demo", "adclicks", "--out-of-orderness", "-5s", dd},
		{"demo", "adclicks", "--rate", "-1", dd},
		{"demo", "adclicks", "--allowed-lateness", "-1m", dd},
		{"demo", "adclicks", "--events", "-3", dd},
		{"bench", "adclicks", "--checkpoint-interval", "-1s"},
		{"bench", "log", "--records", "-1"},
		{"nexmark", "gen", "--rate", "-2"},
	} {
		stdout, stderr, code := run(t, args...)
		flag := args[2]
		if code == 0 || !strings.Contains(stderr, flag) || !strings.Contains(stderr, "must not be negative") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
		if stdout != "" {
			t.Errorf("%v ran: %q", args, stdout)
		}
	}
}

// NaN and infinities are refused by every command like negative numbers
// (issue 35: `--rate NaN` was accepted and then produced nothing).
func TestNonFiniteFlagsRefused(t *testing.T) {
	dd := "--data-dir=" + t.TempDir()
	for _, args := range [][]string{
		{"demo", "adclicks", "--rate", "NaN", dd},
		{"demo", "adclicks", "--rate", "Inf", dd},
		{"demo", "adclicks", "--rate", "+Inf", dd},
		{"nexmark", "gen", "--rate", "nan"},
		{"bench", "adclicks", "--latency-fraction", "Inf"},
	} {
		stdout, stderr, code := run(t, args...)
		flag := args[2]
		if code == 0 || !strings.Contains(stderr, flag) || !strings.Contains(stderr, "must be a finite number") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
		if stdout != "" {
			t.Errorf("%v ran: %q", args, stdout)
		}
	}
}

// After `weir savepoint --stop` the demo says it was stopped, with what it
// read, instead of a true-up that counts every unread click as late.
func TestDemoStoppedWithSavepointSummary(t *testing.T) {
	ck := t.TempDir()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(context.Background(), []string{"demo", "adclicks", "--source", "generator", "--quiet",
			"--events", "50000000", "--rate", "20000", "--checkpoint-dir", ck, "--checkpoint-interval", "50ms"}, &out, &errb)
	}()
	var addr, token string
	if !weirtest.Poll(30*time.Second, func() bool {
		a, tok, err := control.Endpoint(ck)
		addr, token = a, tok
		return err == nil && a != ""
	}) {
		t.Fatalf("no control address: %s", errb.String())
	}
	// A relative name lands in the savepoint directory (--savepoint-dir,
	// default under the checkpoint directory). The endpoint listens before
	// the job's tasks run: a request until then waits for them.
	sp, err := control.RequestSavepoint(context.Background(), addr, token, "sp", true)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the demo did not end after the stop")
	}
	got := out.String()
	if !strings.Contains(got, "stopped with a savepoint into "+sp) || !strings.Contains(got, "summary (partial)") {
		t.Fatalf("summary does not say the job was stopped:\n%s", got)
	}
	if strings.Contains(got, "true-up:") || strings.Contains(got, "watermark cost") {
		t.Fatalf("a stopped demo claims a true-up:\n%s", got)
	}
}

// inspect of a checkpoint whose file does not match its checksum prints
// what it can and exits non-zero.
func TestCheckpointsInspectFailsOnBadChecksum(t *testing.T) {
	ck := filepath.Join(t.TempDir(), "ck")
	if _, stderr, code := run(t, "demo", "adclicks", "--source", "generator", "--events", "20000", "--quiet", "--checkpoint-dir", ck, "--checkpoint-interval", "5ms"); code != 0 {
		t.Fatalf("demo: %s", stderr)
	}
	chk, err := filepath.Glob(filepath.Join(ck, "chk-*"))
	if err != nil || len(chk) == 0 {
		t.Fatalf("no checkpoint in %s", ck)
	}
	path := chk[len(chk)-1]
	if _, stderr, code := run(t, "checkpoints", "inspect", path); code != 0 {
		t.Fatalf("inspect of a good checkpoint: %s", stderr)
	}
	// Flip a byte of the largest file of the checkpoint, its state.
	var victim string
	var size int64
	filepath.Walk(path, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > size && !strings.Contains(fi.Name(), "metadata") && !strings.HasPrefix(fi.Name(), "_") {
			victim, size = p, fi.Size()
		}
		return nil
	})
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(victim, b, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "checkpoints", "inspect", path)
	if code == 0 {
		t.Fatalf("inspect of a damaged checkpoint exited 0:\n%s", stdout)
	}
	if strings.Contains(stdout, "verify          ok") || !strings.Contains(stderr, "does not verify") {
		t.Fatalf("stdout:\n%s\nstderr: %s", stdout, stderr)
	}
}
