package nexmark

import (
	"bufio"
	"io"
	"sync"
)

// JSONLines writes the rows of a query to one writer, a JSON object per
// line. Each sink subtask buffers its lines and hands them over in blocks,
// so lines of different subtasks interleave but never mix.
type JSONLines struct {
	mu struct {
		sync.Mutex
		w    *bufio.Writer
		rows int64
		err  error
	}
}

// NewJSONLines returns a JSONLines writing to w. Call Flush after the job.
func NewJSONLines(w io.Writer) *JSONLines {
	j := &JSONLines{}
	j.mu.w = bufio.NewWriterSize(w, 1<<16)
	return j
}

// Output is the Output to give to a query.
func (j *JSONLines) Output() Output {
	return func(int) (RowWriter, error) { return &jsonLinesWriter{j: j}, nil }
}

// Rows is the number of rows written so far.
func (j *JSONLines) Rows() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.rows
}

// Flush writes what is buffered and returns the first error.
func (j *JSONLines) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.mu.err == nil {
		j.mu.err = j.mu.w.Flush()
	}
	return j.mu.err
}

func (j *JSONLines) write(b []byte, rows int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.mu.err == nil {
		_, j.mu.err = j.mu.w.Write(b)
	}
	j.mu.rows += rows
	return j.mu.err
}

type jsonLinesWriter struct {
	j    *JSONLines
	buf  []byte
	rows int64
}

func (w *jsonLinesWriter) Write(r Row) error {
	w.buf = append(r.AppendJSON(w.buf), '\n')
	w.rows++
	if len(w.buf) >= 1<<16 {
		return w.flush()
	}
	return nil
}

func (w *jsonLinesWriter) flush() error {
	err := w.j.write(w.buf, w.rows)
	w.buf, w.rows = w.buf[:0], 0
	return err
}

func (w *jsonLinesWriter) Close() error { return w.flush() }
