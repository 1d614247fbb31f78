package cli

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/weirstream/weir/internal/testing/pgtest"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// weir demo cdc on a throwaway server: writers, the view kept through CDC,
// a comparison on demand (the SIGUSR1 channel) and at the end the view
// printed beside the SELECT, equal.
func TestDemoCDC(t *testing.T) {
	if _, err := pgtest.BinDir(); errors.Is(err, pgtest.ErrNotFound) && os.Getenv("WEIR_REQUIRE_POSTGRES") != "1" {
		t.Skip(err)
	}
	var out weirtest.LockedBuffer
	check := make(chan os.Signal, 1)
	check <- syscall.SIGUSR1 // answered while the writers write
	err := runDemoCDC(context.Background(), &out, cdcOpts{orders: 2000, writers: 3, slot: "weir_demo_test", parallelism: 2, seed: 7}, check)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{"starting a throwaway PostgreSQL server", "writers done", "view: total / orders", "the view equals the SELECT of the source"} {
		if !strings.Contains(s, want) {
			t.Fatalf("output lacks %q:\n%s", want, s)
		}
	}
	if !strings.Contains(s, "the view trails the source") && !strings.Contains(s, "] the view equals the SELECT (") {
		t.Fatalf("no comparison on demand:\n%s", s)
	}
	t.Log(s)
}
