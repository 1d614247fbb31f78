package connector_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
)

func TestRegistry(t *testing.T) {
	ids := connector.Identifiers()
	for _, id := range []string{"blackhole", "datagen", "filesystem", "jdbc", "kafka", "nexmark", "postgres-cdc", "print", "upsert-kafka", "weir-log"} {
		if !slices.Contains(ids, id) {
			t.Errorf("connector %s is not registered (%v)", id, ids)
		}
	}
	if slices.Contains(ids, "postgres-cdc") {
		return // the CDC source has replaced the reservation
	}
	_, err := connector.CreateSource(&connector.Table{Name: "orders", Options: map[string]string{"connector": "postgres-cdc"}})
	if err == nil || !strings.Contains(err.Error(), "table 'orders': connector 'postgres-cdc' is not available yet") {
		t.Fatal(err)
	}
}

func TestOptions(t *testing.T) {
	o := connector.NewOptions(&connector.Table{Name: "t", Options: map[string]string{
		"connector": "x", "a": "12", "b": "yes", "d": "10 s", "m": "64mb", "properties.x": "1", "typo": "1",
	}})
	if o.Int("a", 0) != 12 || o.Duration("d", 0) != 10*time.Second || o.MemorySize("m", 0) != 64<<20 || o.String("missing", "def") != "def" {
		t.Fatal("values")
	}
	o.Bool("b", false)
	o.Required("r")
	if p := o.Prefixed("properties."); p["x"] != "1" {
		t.Fatal(p)
	}
	err := o.Err()
	want := "table 't' (connector 'x'): option 'b' = 'yes': must be 'true' or 'false'; missing required option 'r'; " +
		"unsupported options found for 'x': 'typo' (supported options: a, b, connector, d, m, missing, properties.*, r)"
	if err == nil || err.Error() != want {
		t.Fatalf("\n got %v\nwant %s", err, want)
	}
	oe := err.(*connector.OptionsError)
	if strings.Join(oe.Missing(), ",") != "r" || strings.Join(oe.Unsupported, ",") != "typo" {
		t.Fatal(oe.Missing(), oe.Unsupported)
	}
	for _, c := range []struct {
		in   string
		want time.Duration
	}{{"100", 100 * time.Millisecond}, {"5min", 5 * time.Minute}, {"2 h", 2 * time.Hour}, {"1d", 24 * time.Hour}, {"30 seconds", 30 * time.Second}} {
		if d, err := connector.ParseDuration(c.in); err != nil || d != c.want {
			t.Errorf("ParseDuration(%s) = %v, %v", c.in, d, err)
		}
	}
}
