// Package postgrestest exports the throwaway PostgreSQL server of
// connector/postgres's tests (internal/pgtest) to the tests of other
// packages (the SQL layer's jdbc connector), which Go's internal rule keeps
// from importing it directly.
package postgrestest

import (
	"context"
	"time"

	"github.com/weirstream/weir/connector/postgres/internal/pgtest"
)

// Server is a running throwaway server; see pgtest.Server.
type Server = pgtest.Server

// ErrNotFound is returned by Start when PostgreSQL is not installed.
var ErrNotFound = pgtest.ErrNotFound

// Start starts a server (initdb in a temporary directory, a Unix socket
// there only); stop it with Server.Stop.
func Start(ctx context.Context, timeout time.Duration) (*Server, error) {
	return pgtest.Start(ctx, timeout)
}
