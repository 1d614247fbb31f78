package wlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Too many partitions fail at once, saying the limit, and create nothing.
func TestCreateTopicLimits(t *testing.T) {
	dir := t.TempDir()
	for _, cfg := range []TopicConfig{
		{Partitions: 100_000_000},
		{Partitions: MaxPartitions + 1},
		{Partitions: 0},
		{Partitions: 1, SegmentBytes: 3_000_000_000},
		{Partitions: 1, SegmentBytes: 10},
	} {
		_, err := CreateTopic(dir, "big", cfg)
		if err == nil {
			t.Fatalf("%+v accepted", cfg)
		}
		if cfg.Partitions != 1 && !strings.Contains(err.Error(), "10000") {
			t.Errorf("%+v: %v does not say the limit", cfg, err)
		}
		if cfg.SegmentBytes != 0 && (strings.Contains(err.Error(), "too small") || !strings.Contains(err.Error(), "2147483648")) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

// A cancelled creation stops and leaves no .create-* directory.
func TestCreateTopicCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := CreateTopicContext(ctx, dir, "t", TopicConfig{Partitions: 100}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

func TestTopicNames(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a", MaxTopicName)
	for _, name := range []string{"a", "A.b_c-d", "0", long} {
		if _, err := CreateTopic(dir, name, TopicConfig{Partitions: 1}); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	// The longest name can be deleted too (its .delete- directory is the
	// longest name weir makes).
	if err := DeleteTopic(dir, long); err != nil {
		t.Fatalf("delete %d characters: %v", len(long), err)
	}
	for _, name := range []string{"", ".", "..", ".hidden", "-flag", "a/b", "a b", "é", long + "a", strings.Repeat("b", 249)} {
		if _, err := CreateTopic(dir, name, TopicConfig{Partitions: 1}); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind %s", filepath.Join(dir, e.Name()))
		}
	}
}
