package file

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/weirstream/weir"
)

// writeBufferSize is the buffer size of a JSONLinesSink writer.
const writeBufferSize = 256 << 10

// JSONLinesSink returns a sink writing its records to a JSON Lines file, one
// JSON value (encoding/json, HTML characters not escaped) per line. The file
// is created, or truncated if it exists. Writes are buffered; Close flushes
// the buffer and fsyncs the file.
//
// When the sink runs at parallelism 1, it writes to path. At parallelism p
// > 1, subtask i writes its own file: path with "-i" inserted before the
// extension, so out.jsonl becomes out-0.jsonl ... out-(p-1).jsonl (and out,
// without extension, becomes out-0 ...).
func JSONLinesSink[T any](path string) weir.Sink[T] {
	return jsonLinesSink[T]{path: filepath.Clean(path)}
}

type jsonLinesSink[T any] struct{ path string }

// subtaskPath is the file that subtask i of p writes.
func subtaskPath(path string, i, p int) string {
	if p <= 1 {
		return path
	}
	ext := filepath.Ext(path)
	return path[:len(path)-len(ext)] + "-" + strconv.Itoa(i) + ext
}

// OpenWriter implements weir.Sink.
func (s jsonLinesSink[T]) OpenWriter(_ context.Context, subtask, parallelism int) (weir.SinkWriter[T], error) {
	path := subtaskPath(s.path, subtask, parallelism)
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	w := &jsonLinesWriter[T]{path: path, f: f, bw: bufio.NewWriterSize(f, writeBufferSize)}
	w.enc = json.NewEncoder(w.bw)
	w.enc.SetEscapeHTML(false)
	return w, nil
}

type jsonLinesWriter[T any] struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	enc  *json.Encoder
}

func (w *jsonLinesWriter[T]) Write(_ context.Context, items []T) error {
	for i := range items {
		// Encode writes a '\n' after each value.
		if err := w.enc.Encode(&items[i]); err != nil {
			return fmt.Errorf("file: write %s: %w", w.path, err)
		}
	}
	return nil
}

func (w *jsonLinesWriter[T]) Close(context.Context) error {
	if w.f == nil {
		return nil
	}
	err := w.bw.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	err = errors.Join(err, w.f.Close())
	w.f = nil
	if err != nil {
		return fmt.Errorf("file: close %s: %w", w.path, err)
	}
	return nil
}

// stdoutMu serializes the writes of every Stdout sink.
var stdoutMu sync.Mutex

// Stdout returns a sink printing one line per record to os.Stdout: format's
// result and a '\n'. A nil format prints records with fmt.Sprint. The lines
// of one Write call are written at once, and the writes of all subtasks of
// all Stdout sinks are serialized, so lines never interleave.
func Stdout[T any](format func(T) string) weir.Sink[T] {
	return &writerSink[T]{w: os.Stdout, mu: &stdoutMu, format: format}
}

// Writer is like Stdout, but writes to w. The writes of the subtasks of the
// sink are serialized with a mutex: w need not be safe for concurrent use
// (but must not be written to by anything else while the job runs). Writer
// does not close w.
func Writer[T any](w io.Writer, format func(T) string) weir.Sink[T] {
	return &writerSink[T]{w: w, mu: new(sync.Mutex), format: format}
}

type writerSink[T any] struct {
	w      io.Writer
	mu     *sync.Mutex
	format func(T) string
}

// OpenWriter implements weir.Sink.
func (s *writerSink[T]) OpenWriter(context.Context, int, int) (weir.SinkWriter[T], error) {
	return &lineWriter[T]{s: s}, nil
}

type lineWriter[T any] struct {
	s   *writerSink[T]
	buf []byte
}

func (w *lineWriter[T]) Write(_ context.Context, items []T) error {
	if len(items) == 0 {
		return nil
	}
	w.buf = w.buf[:0]
	for _, v := range items {
		if w.s.format != nil {
			w.buf = append(w.buf, w.s.format(v)...)
		} else {
			w.buf = fmt.Append(w.buf, v)
		}
		w.buf = append(w.buf, '\n')
	}
	w.s.mu.Lock()
	_, err := w.s.w.Write(w.buf)
	w.s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("file: write: %w", err)
	}
	return nil
}

func (w *lineWriter[T]) Close(context.Context) error { return nil }
