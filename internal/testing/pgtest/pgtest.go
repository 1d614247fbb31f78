// Package pgtest runs a throwaway PostgreSQL server for tests: initdb into
// a temporary directory, postgres listening on a Unix socket in that
// directory only (no TCP port, so nothing outside the machine can reach it
// and parallel test binaries never fight over a port), trust
// authentication, and durability switched off (fsync, synchronous_commit,
// full_page_writes) because the data is thrown away. The server runs
// with wal_level=logical and room for replication slots and WAL senders,
// so the CDC source (connector/postgres) can be tested on it; initdb's
// trust pg_hba.conf lets local replication connections in.
//
// weir demo cdc starts one when the user names no database.
//
// PostgreSQL refuses to run as root: when the test runs as root, initdb and
// postgres run as the user "postgres" (or "nobody"), which owns the
// temporary directory. The server is the test process's child and gets
// SIGQUIT (immediate shutdown) if the test process dies, so a killed test
// leaves no server behind.
//
// scripts/postgres.sh does the same from a shell, and installs PostgreSQL
// when it is missing.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNotFound says that no PostgreSQL binaries were found.
var ErrNotFound = errors.New("pgtest: PostgreSQL binaries (initdb, postgres) not found: set WEIR_PG_BINDIR, or install PostgreSQL (bash scripts/postgres.sh install)")

// BinDir returns the directory of initdb and postgres: $WEIR_PG_BINDIR,
// else the newest /usr/lib/postgresql/<version>/bin (Debian, Ubuntu), else
// the directory of initdb on PATH.
func BinDir() (string, error) {
	ok := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("WEIR_PG_BINDIR"); d != "" {
		if !ok(d) {
			return "", fmt.Errorf("%w (WEIR_PG_BINDIR=%s has none)", ErrNotFound, d)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil && ok(filepath.Dir(r)) {
			return filepath.Dir(r), nil
		}
	}
	return "", ErrNotFound
}

// Server is a running throwaway server.
type Server struct {
	// DSN connects to the server's database "postgres" as superuser "weir".
	DSN string
	// Dir holds the data directory, the socket and the server log.
	Dir string

	cmd  *exec.Cmd
	done chan struct{} // closed when the server process has exited
	err  error         // its exit status, once done
}

// Start initialises a cluster in a new temporary directory and starts a
// server on it, returning once the server accepts connections (or failing
// after timeout). settings ("name=value") override the server's defaults
// (a test of a server without logical decoding passes "wal_level=replica").
func Start(ctx context.Context, timeout time.Duration, settings ...string) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "weir-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{Dir: dir, done: make(chan struct{})}
	fail := func(err error) (*Server, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	cred, err := credential(dir)
	if err != nil {
		return fail(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "LANG=C", "TZ=UTC"}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "weir", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir, initdb.Env = dir, env
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("pgtest: %s -D %s: %v\n%s", initdb.Path, data, err, out))
	}
	logPath := filepath.Join(dir, "postgres.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fail(fmt.Errorf("pgtest: %w", err))
	}
	defer logf.Close()
	// Durability off: the data is thrown away. The socket is the only
	// listener (listen_addresses empty).
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir,
		"-c", "listen_addresses=", "-c", "port=5432",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=64MB",
		"-c", "wal_level=logical", "-c", "max_replication_slots=40", "-c", "max_wal_senders=40",
		"-c", "lc_messages=C", "-c", "log_min_messages=warning", "-c", "timezone=UTC")
	for _, kv := range settings {
		s.cmd.Args = append(s.cmd.Args, "-c", kv)
	}
	s.cmd.Dir, s.cmd.Env = dir, env
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	// Pdeathsig (Linux) is tied to the thread that forks: keep it for the
	// call.
	s.cmd.SysProcAttr = procAttr(cred)
	runtime.LockOSThread()
	err = s.cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		return fail(fmt.Errorf("pgtest: start %s: %w", s.cmd.Path, err))
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	s.DSN = fmt.Sprintf("host='%s' port=5432 user=weir dbname=postgres sslmode=disable", strings.ReplaceAll(dir, `'`, `\'`))
	// Wait for the server to accept connections: a condition (a successful
	// connection) with a deadline, retried every 10 ms.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, s.DSN)
		ccancel()
		if err == nil {
			conn.Close(ctx)
			return s, nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(logPath)
			return fail(fmt.Errorf("pgtest: postgres exited (%v) before accepting connections:\n%s", s.err, log))
		case <-ctx.Done():
			s.kill()
			log, _ := os.ReadFile(logPath)
			return fail(fmt.Errorf("pgtest: postgres not accepting connections within %v (last error: %v):\n%s", timeout, err, log))
		case <-tick.C:
		}
	}
}

// credential returns the user initdb and postgres run as: nil (this
// process's) unless it is root, which PostgreSQL refuses; then "postgres"
// or "nobody", made owner of dir.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and neither user postgres nor nobody exists to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	// The temporary directory's parents must be searchable by that user;
	// os.TempDir normally is (/tmp).
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func (s *Server) kill() {
	s.cmd.Process.Signal(syscall.SIGQUIT)
	<-s.done
}

// Stop shuts the server down (fast shutdown: sessions are ended) and
// removes its directory.
func (s *Server) Stop() error {
	s.cmd.Process.Signal(syscall.SIGINT)
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	var err error
	select {
	case <-s.done:
	case <-t.C:
		s.kill()
		err = errors.New("pgtest: postgres did not stop within 30s; killed")
	}
	if rerr := os.RemoveAll(s.Dir); rerr != nil && err == nil {
		err = fmt.Errorf("pgtest: %w", rerr)
	}
	return err
}

// Log returns the server log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "postgres.log"))
	return string(b)
}
