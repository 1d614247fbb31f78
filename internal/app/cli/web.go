package cli

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
)

// webFlags are --web-addr and --web-token-file, the same on every command
// that runs a job.
type webFlags struct {
	addr, tokenFile string
	// level is the least level the job logs (warnings unless the command
	// has a --log-level); the server's line saying where it listens is
	// logged whatever it is.
	level slog.Level
}

// add defines the flags; def says where the token goes by default.
func (w *webFlags) add(cmd *cobra.Command, def string) {
	w.level = slog.LevelWarn
	f := cmd.Flags()
	f.StringVar(&w.addr, "web-addr", "", "serve the web dashboard and REST API at this address (loopback unless a host is given, e.g. :8081; off by default)")
	f.StringVar(&w.tokenFile, "web-token-file", "", "write the dashboard's token to this file, mode 0600 (default: "+def+"); open /login?token=TOKEN")
}

// options are the job options the flags ask for. Without a checkpoint
// directory the token goes to the data directory. The job logs at w.level
// (the demos: warnings only); the server's address and token file are
// logged to stderr too.
func (w *webFlags) options(stderr io.Writer, ckDir, dataDir string) []weir.JobOption {
	if w.addr == "" {
		return nil
	}
	if stderr == nil {
		stderr = io.Discard
	}
	opts := []weir.JobOption{weir.WebAddr(w.addr), weir.Logger(w.logger(stderr))}
	switch {
	case w.tokenFile != "":
		opts = append(opts, weir.WebTokenFile(w.tokenFile))
	case ckDir == "" && dataDir != "":
		opts = append(opts, weir.WebTokenFile(filepath.Join(dataDir, "web.token")))
	}
	return opts
}

// logger is the job's log on stderr: records of w.level and above, and
// the web server's line saying where it listens.
func (w *webFlags) logger(stderr io.Writer) *slog.Logger {
	return slog.New(announce{slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: min(w.level, slog.LevelInfo)}), w.level})
}

// announce passes records of level min and above, and the web server's
// line saying where it listens and where its token is.
type announce struct {
	slog.Handler
	min slog.Level
}

func (a announce) Enabled(ctx context.Context, l slog.Level) bool {
	return a.Handler.Enabled(ctx, l)
}

func (a announce) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < a.min && r.Message != webListening {
		return nil
	}
	return a.Handler.Handle(ctx, r)
}

func (a announce) WithAttrs(as []slog.Attr) slog.Handler {
	return announce{a.Handler.WithAttrs(as), a.min}
}
func (a announce) WithGroup(g string) slog.Handler { return announce{a.Handler.WithGroup(g), a.min} }

// webListening is the message of the web server's log line (internal/web).
const webListening = "web dashboard listening"
