// Package pgtest forwards to internal/pgtest, the throwaway PostgreSQL
// server of the tests and of weir demo cdc, which moved there so that the
// CLI can start one too. It stays for the tests that import it here.
package pgtest

import "github.com/weirstream/weir/internal/pgtest"

// Server is a running throwaway server.
type Server = pgtest.Server

// ErrNotFound says that no PostgreSQL binaries were found.
var ErrNotFound = pgtest.ErrNotFound

// Start initialises a cluster in a new temporary directory and starts a
// server on it.
var Start = pgtest.Start

// BinDir returns the directory of initdb and postgres.
var BinDir = pgtest.BinDir
