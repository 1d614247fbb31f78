package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// logBuffer collects log output from several goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	b := new(logBuffer)
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// openStore opens a store in a fresh directory, logging to the returned
// buffer.
func openStore(t *testing.T, opts ...Option) (*Store, *logBuffer) {
	t.Helper()
	logger, logs := newLogger()
	s, err := Open(filepath.Join(t.TempDir(), "checkpoints"), append([]Option{WithLogger(logger)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs)
		}
	})
	return s, logs
}

// content is the content of state file i of checkpoint id: distinct per
// checkpoint, and large enough to span several buffer flushes for i == 0.
func content(id int64, i int) []byte {
	n := 100
	if i == 0 {
		n = 20000
	}
	return bytes.Repeat(fmt.Appendf(nil, "chk %d file %d;", id, i), n)
}

const testFiles = 3

// writeCheckpoint writes checkpoint id with testFiles state files of one
// keyed operator and a source with offsets in Extra.
func writeCheckpoint(s *Store, id int64, kind Kind) (*Checkpoint, error) {
	p, err := s.Begin(id, kind)
	if err != nil {
		return nil, err
	}
	defer p.Abort()
	op := OperatorState{UID: "window", Name: "Window", Parallelism: testFiles}
	for i := range testFiles {
		w, err := p.Create(fmt.Sprintf("window.%d", i))
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(content(id, i)); err != nil {
			w.Close()
			return nil, err
		}
		info, err := w.Close()
		if err != nil {
			return nil, err
		}
		info.Subtask = i
		info.KeyGroups = &KeyGroupRange{Start: i * 10, End: i*10 + 10}
		op.Files = append(op.Files, info)
	}
	src := OperatorState{UID: "source", Name: "Source", Parallelism: 1,
		Extra: map[string]json.RawMessage{"offsets": json.RawMessage(fmt.Sprintf(`{"p0":%d}`, id*100))}}
	return p.Commit(Metadata{
		Job:            "test",
		JobOptions:     map[string]string{"parallelism": "3"},
		MaxParallelism: 128,
		Operators:      []OperatorState{src, op},
	})
}

func mustWrite(t *testing.T, s *Store, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if _, err := writeCheckpoint(s, id, KindCheckpoint); err != nil {
			t.Fatalf("checkpoint %d: %v", id, err)
		}
	}
}

func chkPath(s *Store, id int64) string {
	return filepath.Join(s.Dir(), fmt.Sprintf("chk-%010d", id))
}

// checkContents reads every file of c and compares it with what
// writeCheckpoint wrote.
func checkContents(t *testing.T, c *Checkpoint) {
	t.Helper()
	for i := range testFiles {
		got, err := c.ReadFile(fmt.Sprintf("window.%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, content(c.ID(), i)) {
			t.Fatalf("checkpoint %d file %d: content differs", c.ID(), i)
		}
	}
	if err := c.Verify(); err != nil {
		t.Fatal(err)
	}
}

func wantLatest(t *testing.T, s *Store, id int64) *Checkpoint {
	t.Helper()
	c, err := s.Latest()
	if err != nil {
		t.Fatalf("Latest: %v", err)
	}
	if c.ID() != id {
		t.Fatalf("Latest is %d, want %d", c.ID(), id)
	}
	return c
}

func flipBit(t *testing.T, path string, off int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += len(data)
	}
	data[off] ^= 0x10
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantContains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not mention %q:\n%s", what, sub, s)
		}
	}
}

func checksumOf(b []byte) Checksum { return Checksum(crc32.Checksum(b, castagnoli)) }
