package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/peterh/liner"
)

// The interactive shell reads lines through a lineReader: on a terminal a
// line editor (github.com/peterh/liner) with the statements of this and
// earlier sessions as history (up/down arrows, Ctrl-R search), kept in a
// file as Flink's sql-client keeps ~/.flink-sql-history; otherwise plain
// lines from the input, without history.
type lineReader interface {
	// ReadLine returns the next line without its newline; io.EOF at the
	// end of the input, errLineAborted when the user pressed Ctrl-C.
	ReadLine(prompt string) (string, error)
	// AddHistory records a complete statement.
	AddHistory(stmt string)
	Close() error
}

var errLineAborted = errors.New("line aborted")

// scanReader reads lines from a non-terminal input.
type scanReader struct {
	sc     *bufio.Scanner
	prompt io.Writer
}

func newScanReader(in io.Reader, prompt io.Writer) *scanReader {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	return &scanReader{sc: sc, prompt: prompt}
}

func (r *scanReader) ReadLine(prompt string) (string, error) {
	fmt.Fprint(r.prompt, prompt)
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			return "", err
		}
		return "", io.EOF
	}
	return r.sc.Text(), nil
}

func (r *scanReader) AddHistory(string) {}
func (r *scanReader) Close() error      { return nil }

// sqlHistoryFile is where the shell keeps its history:
// $XDG_CONFIG_HOME/weir/sql-history (os.UserConfigDir), else
// ~/.weir-sql-history.
func sqlHistoryFile() string {
	if dir, err := os.UserConfigDir(); err == nil {
		return filepath.Join(dir, "weir", "sql-history")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".weir-sql-history")
	}
	return ""
}

// historyReader is the line editor with a history file ("" keeps the
// history for the session only).
type historyReader struct {
	st   *liner.State
	path string
	err  io.Writer
}

func newHistoryReader(path string, errOut io.Writer) *historyReader {
	st := liner.NewLiner()
	st.SetCtrlCAborts(true)
	st.SetMultiLineMode(true)
	r := &historyReader{st: st, path: path, err: errOut}
	if path != "" {
		if f, err := os.Open(path); err == nil {
			st.ReadHistory(f)
			f.Close()
		}
	}
	return r
}

func (r *historyReader) ReadLine(prompt string) (string, error) {
	line, err := r.st.Prompt(prompt)
	if errors.Is(err, liner.ErrPromptAborted) {
		return "", errLineAborted
	}
	return line, err
}

// AddHistory adds the statement as one line (a multi-line statement
// comes back whole with the up arrow) and rewrites the history file, so a
// killed shell loses nothing.
func (r *historyReader) AddHistory(stmt string) {
	line := strings.Join(strings.Fields(stmt), " ")
	if line == "" {
		return
	}
	r.st.AppendHistory(line)
	if err := r.save(); err != nil {
		fmt.Fprintf(r.err, "[WARNING] history not saved: %v\n", err)
		r.path = "" // warn once
	}
}

func (r *historyReader) save() error {
	if r.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return err
	}
	tmp := r.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := r.st.WriteHistory(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, r.path)
}

func (r *historyReader) Close() error { return r.st.Close() }

// isTerminalInput reports whether in is a terminal (the shell then edits
// lines and keeps a history).
func isTerminalInput(in io.Reader) bool {
	f, ok := in.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
