package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql"
	_ "github.com/weirstream/weir/sql/connector/builtin" // the table connectors and formats
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// newSQL is `weir sql`: run a file of Flink SQL statements as one job
// (-f), or an interactive shell.
func newSQL() *cobra.Command {
	var (
		file        string
		parallelism int
		ckDir       string
		ckInterval  time.Duration
		defines     []string
		logDir      string
		funcDir     string
		appID       string
		web         webFlags
		microbatch  time.Duration
		logLevel    string
		state       stateFlags
	)
	cmd := &cobra.Command{
		Use:   "sql [-f FILE]",
		Short: "Run Flink SQL statements (a file with -f, else an interactive shell)",
		Long: `Runs Flink SQL on weir, as Flink's sql-client.sh does.

With -f FILE: the file's DDL (CREATE TABLE/VIEW) is registered, every INSERT INTO
of the file runs in one job (a statement set), SELECT results print as a changelog
(+I/-U/+U/-D rows), and the command exits when the bounded inputs are done or on
SIGINT/SIGTERM (stopping the job cleanly).

Without -f: an interactive shell reading statements that end with ';'.

${NAME} in the statements is replaced by --define NAME=VALUE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := web.level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			opts := []sql.Option{sql.Parallelism(parallelism), sql.Stdout(cmd.OutOrStdout()), sql.LogDir(logDir),
				sql.JobOptions(weir.Logger(web.logger(cmd.ErrOrStderr()))), sql.FunctionDir(funcDir)}
			for _, d := range defines {
				k, v, ok := strings.Cut(d, "=")
				if !ok || k == "" {
					return fmt.Errorf("--define %q: want NAME=VALUE", d)
				}
				opts = append(opts, sql.Define(k, v))
			}
			if err := checkMicrobatch(microbatch); err != nil {
				return err
			}
			stateOpts, stateDone, err := state.options()
			if err != nil {
				return err
			}
			defer stateDone()
			opts = append(opts, sql.JobOptions(stateOpts...))
			if state.dir != "" {
				opts = append(opts, sql.StateDir(state.dir))
			}
			if microbatch > 0 {
				opts = append(opts, sql.JobOptions(weir.Microbatch(microbatch)))
			}
			if ckDir != "" {
				if ckInterval <= 0 {
					return fmt.Errorf("--checkpoint-dir needs a positive --checkpoint-interval")
				}
				opts = append(opts, sql.Checkpointing(ckInterval, ckDir))
			}
			if appID != "" {
				// Group mode (docs/scale-out.md): the processes started
				// with this id share the Kafka input; the checkpoint
				// interval is the commit interval.
				opts = append(opts, sql.JobOptions(weir.AppID(appID)))
			}
			if web.addr != "" {
				if ckDir == "" && web.tokenFile == "" {
					return fmt.Errorf("--web-addr needs --web-token-file or --checkpoint-dir (where the token is written)")
				}
				opts = append(opts, sql.JobOptions(web.options(cmd.ErrOrStderr(), ckDir, "")...))
			}
			if file == "" {
				return sqlShell(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
			}
			text, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			opts = append(opts, sql.JobName(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))))
			s := sql.NewSession(opts...)
			job, err := s.Plan(string(text))
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if job == nil {
				return nil
			}
			err = runUntilDone(cmd.Context(), job)
			if err == nil && microbatch > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "microbatch %v: %d epochs committed\n", microbatch, job.Metrics().Checkpoints.Completed)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "file of SQL statements to run")
	f.IntVar(&parallelism, "parallelism", 1, "default parallelism of the job's operators")
	f.StringVar(&ckDir, "checkpoint-dir", "", "take checkpoints into this directory")
	f.DurationVar(&ckInterval, "checkpoint-interval", 10*time.Second, "time between checkpoints (with --checkpoint-dir)")
	f.DurationVar(&microbatch, "microbatch", 0, microbatchUsage)
	f.StringArrayVar(&defines, "define", nil, "NAME=VALUE for ${NAME} in the statements (repeatable)")
	f.StringVar(&logDir, "log-dir", "", "data directory of the embedded log for 'weir-log' tables")
	state.add(f) // (SET 'state.backend.type' = 'rocksdb' in the script does the same)
	f.StringVar(&funcDir, "function-dir", ".", "directory of the WebAssembly modules of CREATE FUNCTION ... LANGUAGE WASM (their paths must stay inside it)")
	f.StringVar(&appID, "app-id", "", "run as one process of application ID: the processes started with the same id share the Kafka input through a consumer group (docs/scale-out.md)")
	f.StringVar(&logLevel, "log-level", "warn", "least level of the job's log lines on stderr: debug, info, warn or error (info adds the job's start, restore and end and, with --app-id, the group's assignments, restores and aborted transactions)")
	web.add(cmd, "control.token in --checkpoint-dir")
	return cmd
}

// runUntilDone runs a job until its bounded inputs end; a cancelled ctx
// (SIGINT/SIGTERM) stops it, which is a clean exit.
func runUntilDone(ctx context.Context, job *weir.Job) error {
	err := job.Run(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}

// sqlShell reads statements ending with ';' and runs them one at a time:
// DDL, SET, SHOW, DESCRIBE and EXPLAIN at once; INSERT INTO and SELECT as
// a job each, SELECT printing its result as a changelog until the job
// ends or the user interrupts it.
//
// The shell outlives Ctrl-C, as Flink's sql-client does: SIGINT cancels
// the statement running and the session keeps its tables; SIGTERM, the
// end of the input, QUIT or EXIT end the shell. (The command's context,
// which SIGINT cancels, is therefore not the shell's.)
func sqlShell(ctx context.Context, in io.Reader, out, errOut io.Writer, opts []sql.Option) error {
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	ctx, stop := signal.NotifyContext(context.WithoutCancel(ctx), syscall.SIGTERM)
	defer stop()
	var lr lineReader
	if isTerminalInput(in) && in == io.Reader(os.Stdin) {
		lr = newHistoryReader(sqlHistoryFile(), errOut)
	} else {
		lr = newScanReader(in, errOut)
	}
	defer lr.Close()
	return shellLoop(ctx, lr, out, errOut, opts, interrupts)
}

// shellLoop runs the statements lr reads, each one added to its history; a
// value on interrupts cancels the statement running.
func shellLoop(ctx context.Context, lr lineReader, out, errOut io.Writer, opts []sql.Option, interrupts <-chan os.Signal) error {
	printed := &countingWriter{w: out}
	s := sql.NewSession(append(opts, sql.Stdout(printed))...)
	var buf strings.Builder
	for {
		prompt := "weir> "
		if buf.Len() > 0 {
			prompt = "   -> "
		}
		line, err := lr.ReadLine(prompt)
		if errors.Is(err, errLineAborted) {
			buf.Reset() // Ctrl-C drops the statement being typed
			continue
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		if !statementComplete(buf.String()) {
			continue
		}
		text := buf.String()
		buf.Reset()
		lr.AddHistory(text)
		switch word := strings.ToUpper(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text), ";"))); word {
		case "QUIT", "EXIT":
			return nil
		case "HELP":
			io.WriteString(out, shellHelp)
			continue
		case "CLEAR":
			io.WriteString(out, "\x1b[H\x1b[2J")
			continue
		}
		before := printed.n.Load()
		if err := shellExec(ctx, s, text, out, interrupts); err != nil {
			fmt.Fprintln(errOut, "[ERROR]", err)
		} else if msg := shellInfo(text, printed.n.Load() > before); msg != "" {
			fmt.Fprintln(out, msg)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// statementComplete reports whether text ends with a ';' outside quotes
// and comments.
func statementComplete(text string) bool {
	inStr, inIdent, inLine, inBlock := false, false, false, false
	last := byte(0)
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inLine:
			if c == '\n' {
				inLine = false
			}
			continue
		case inBlock:
			if c == '*' && i+1 < len(text) && text[i+1] == '/' {
				inBlock = false
				i++
			}
			continue
		case inStr:
			if c == '\'' {
				inStr = false
			}
			continue
		case inIdent:
			if c == '`' {
				inIdent = false
			}
			continue
		}
		switch {
		case c == '\'':
			inStr = true
		case c == '`':
			inIdent = true
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			inLine = true
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			inBlock = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		last = c
	}
	return last == ';' && !inStr && !inIdent && !inBlock
}

// shellHelp is what HELP; prints, after Flink's sql-client.
const shellHelp = `The following commands are available:

CLEAR		Clears the screen.
CREATE TABLE	Create a table under the session, e.g. CREATE TABLE t (a INT) WITH ('connector' = 'datagen');
CREATE VIEW	Create a view under the session, e.g. CREATE VIEW v AS SELECT ...;
DESCRIBE	Describes the schema of a table, e.g. DESCRIBE t;
DROP TABLE	Drops a table, e.g. DROP TABLE t;
DROP VIEW	Drops a view, e.g. DROP VIEW v;
EXPLAIN		Describes the plan of a query or an INSERT, e.g. EXPLAIN SELECT ...;
EXIT		Quits the shell (also QUIT, or the end of input).
HELP		Prints the available commands.
INSERT INTO	Inserts the results of a query into a table; the job runs until its inputs end.
RESET		Resets a session property to its default, e.g. RESET 'table.exec.state.ttl';
SELECT		Runs a query and shows its result, updated as it changes; Ctrl-C cancels it.
		SET 'sql-client.execution.result-mode' = 'table', 'changelog' or 'tableau' says how.
SET		Sets a session property, e.g. SET 'parallelism.default' = '2'; SET; lists them.
SHOW TABLES	Shows the tables and views of the current database (SHOW VIEWS: the views).
SHOW CATALOGS	Shows the catalogs (SHOW DATABASES: the current catalog's databases).
USE		Sets the current database, e.g. USE db; or USE CATALOG c; for the current catalog.
BEGIN STATEMENT SET / END	Runs the INSERTs between them as one job.

Hint: Make sure that a statement ends with ';' to finalize it (multi-line statements work).
`

// shellInfo is the line Flink's sql-client prints after a statement that
// shows no result ("" for none): printed says whether it printed anything.
func shellInfo(text string, printed bool) string {
	stmts, err := parser.Parse(text)
	if err != nil {
		return "" // ${NAME} substitutions and the like: no line
	}
	msg := ""
	for _, st := range stmts {
		switch st := st.(type) {
		case *parser.CreateTable, *parser.CreateView, *parser.Drop, *parser.CreateCatalog, *parser.DropCatalog,
			*parser.CreateDatabase, *parser.DropDatabase, *parser.UseCatalog, *parser.Use:
			msg = "[INFO] Execute statement succeed."
		case *parser.Set:
			if st.Key != "" {
				msg = "[INFO] Session property has been set."
			} else if !printed {
				msg = "Empty set"
			}
		case *parser.Reset:
			msg = "[INFO] Session property has been reset."
		case *parser.ShowTables, *parser.ShowFunctions, *parser.ShowCatalogs, *parser.ShowDatabases:
			if !printed {
				msg = "Empty set"
			}
		}
	}
	return msg
}

// countingWriter counts the bytes written through it (by the jobs'
// print sinks too).
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func shellExec(ctx context.Context, s *sql.Session, text string, out io.Writer, interrupts <-chan os.Signal) error {
	stmts, err := s.Exec(text)
	if err != nil || len(stmts) == 0 {
		return err
	}
	mode, err := resultMode(s)
	if err != nil {
		return err
	}
	var live *liveTable
	var tab *tableau
	query := len(stmts) == 1 && stmts[0].IsQuery()
	switch {
	case query && mode == modeTableau:
		tab = newTableau(out, stmts[0].Schema())
		stmts[0].Subscribe(tab.write)
	case query && mode == modeTable && isTerminal(out):
		// on a terminal a SELECT is a table updated in place
		live = newLiveTable(stmts[0].Schema())
		stmts[0].Subscribe(func(rows []types.Row) error { live.apply(rows); return nil })
	}
	job, err := s.Job(stmts)
	if err != nil {
		return err
	}
	if tab != nil {
		tab.header()
	}
	if live != nil {
		rows := liveRows(out)
		done := make(chan struct{})
		defer close(done)
		go func() {
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					io.WriteString(out, "\x1b[H\x1b[2J")
					live.render(out, rows)
				}
			}
		}()
		defer func() { io.WriteString(out, "\x1b[H\x1b[2J"); live.render(out, 1000) }()
	}
	// a SELECT runs until it ends or the user interrupts it: Ctrl-C ends
	// the query, not the shell
	for len(interrupts) > 0 {
		<-interrupts // pressed before the statement ran
	}
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-interrupts:
			cancel()
		case <-jctx.Done():
		}
	}()
	err = job.Run(jctx)
	cancelled := err != nil && jctx.Err() != nil
	if tab != nil && (err == nil || cancelled) {
		tab.footer(cancelled)
	}
	if cancelled {
		if ctx.Err() == nil && tab == nil {
			fmt.Fprintln(out, "[INFO] The statement was cancelled.")
		}
		return nil
	}
	return err
}
