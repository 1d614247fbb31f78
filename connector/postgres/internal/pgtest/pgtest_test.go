package pgtest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	conn.Close(context.Background())
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("%s left behind: %v", s.Dir, err)
	}
}
