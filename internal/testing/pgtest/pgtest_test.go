package pgtest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A server starts, answers a query, and stops, leaving no directory.
func TestStartStop(t *testing.T) {
	s, err := Start(context.Background(), time.Minute)
	if errors.Is(err, ErrNotFound) && os.Getenv("WEIR_REQUIRE_POSTGRES") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if err := conn.QueryRow(context.Background(), "SHOW fsync").Scan(&v); err != nil || v != "off" {
		t.Errorf("fsync = %q, %v; want off", v, err)
	}
	// Logical decoding works: wal_level, and a replication connection
	// (pg_hba.conf) that can create a slot.
	if err := conn.QueryRow(context.Background(), "SHOW wal_level").Scan(&v); err != nil || v != "logical" {
		t.Errorf("wal_level = %q, %v; want logical", v, err)
	}
	rc, err := pgconn.Connect(context.Background(), s.DSN+" replication=database")
	if err != nil {
		t.Fatalf("replication connection: %v", err)
	}
	if _, err := rc.Exec(context.Background(), "CREATE_REPLICATION_SLOT t TEMPORARY LOGICAL pgoutput NOEXPORT_SNAPSHOT").ReadAll(); err != nil {
		t.Errorf("create a logical slot: %v", err)
	}
	rc.Close(context.Background())
	conn.Close(context.Background())
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("%s left behind: %v", s.Dir, err)
	}
}
