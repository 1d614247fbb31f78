package cli

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/weirstream/weir/internal/testing/poll"
)

// TestShellInATerminal drives `weir sql` in a pseudo-terminal, as a user
// at a terminal (or tmux, or expect) does: line editing on, results as a
// live table, Ctrl-C typed as the byte the terminal turns into SIGINT. A
// datagen table with a WATERMARK and a TUMBLE query shows rows; Ctrl-C
// cancels it and the session still knows the table; HELP; and the [INFO]
// lines appear; the tableau result mode prints a bounded query's rows as
// Flink's sql-client does (issue 38).
func TestShellInATerminal(t *testing.T) {
	cmd := weirCommand([]string{"TERM=xterm", "XDG_CONFIG_HOME=" + t.TempDir()}, "sql")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out syncBuffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&out, tty) // ends with an error when the shell has exited
		close(copied)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("the terminal showed:\n%q", out.String())
		}
	}()
	// after waits for want to appear after the output's first mark bytes.
	after := func(mark int, what, want string) int {
		t.Helper()
		var at int
		poll.WaitFor(t, what, 2*time.Minute, func() bool {
			s := out.String()
			i := strings.Index(s[mark:], want)
			at = mark + i + len(want)
			return i >= 0
		})
		return at
	}
	typeLine := func(line string) int {
		t.Helper()
		mark := len(out.String())
		if _, err := io.WriteString(tty, line+"\r"); err != nil {
			t.Fatal(err)
		}
		return mark
	}

	after(0, "the prompt", "weir> ")
	m := typeLine("HELP;")
	m = after(m, "HELP's list", "The following commands are available:")
	after(m, "the prompt after HELP", "weir> ")

	m = typeLine("CREATE TABLE clicks (ad INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) " +
		"WITH ('connector' = 'datagen', 'rows-per-second' = '500', 'fields.ad.min' = '1', 'fields.ad.max' = '3');")
	m = after(m, "CREATE TABLE's [INFO] line", "[INFO] Execute statement succeed.")
	after(m, "the prompt after CREATE TABLE", "weir> ")

	// The live table shows the windows as they fire: the watermark moves
	// with datagen's timestamps, which follow its pace.
	m = typeLine("SELECT ad, window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY ad, window_start, window_end;")
	rowsLine := regexp.MustCompile(`(\d+) rows \(\d+ shown\)`)
	poll.WaitFor(t, "window rows in the live table", 2*time.Minute, func() bool {
		s := out.String()[m:]
		for _, sm := range rowsLine.FindAllStringSubmatch(s, -1) {
			if n, _ := strconv.Atoi(sm[1]); n >= 3 && strings.Contains(s, "window_start") {
				return true
			}
		}
		return false
	})
	m = len(out.String())
	if _, err := io.WriteString(tty, "\x03"); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	m = after(m, "the query cancelled by Ctrl-C", "[INFO] The statement was cancelled.")
	after(m, "the prompt after the Ctrl-C", "weir> ")

	m = typeLine("SHOW TABLES;")
	after(m, "the table, still known", "clicks\r\n")

	m = typeLine("SET 'sql-client.execution.result-mode' = 'tableau';")
	after(m, "SET's [INFO] line", "[INFO] Session property has been set.")
	m = typeLine("SELECT * FROM (VALUES (1, 'a'), (2, CAST(NULL AS STRING))) AS t(id, name);")
	for _, want := range []string{
		"+----+-------------+--------------------------------+\r\n" +
			"| op |          id |                           name |\r\n" +
			"+----+-------------+--------------------------------+\r\n",
		"| +I |           1 |                              a |\r\n",
		"| +I |           2 |                         <NULL> |\r\n",
		"+----+-------------+--------------------------------+\r\nReceived a total of 2 rows\r\n",
	} {
		after(m, "the tableau's rows", want)
	}

	typeLine("QUIT;")
	waitExit(t, exited, "QUIT")
	select {
	case <-copied:
	case <-time.After(2 * time.Minute):
		t.Fatal("the terminal did not close after the shell ended")
	}
}
