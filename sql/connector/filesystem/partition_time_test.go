package filesystem

import (
	"testing"
	"time"

	"github.com/weirstream/weir/sql/connector"
)

// Flink's default partition-time extractor: the pattern's $names put in
// from the directory, parsed with the formatter (or as a date with an
// optional time) in the watermark's time zone.
func TestPartitionTimeExtractor(t *testing.T) {
	for _, c := range []struct {
		opts  map[string]string
		names []string
		dir   string
		want  string // RFC 3339, "" for an error
	}{
		{nil, []string{"dt"}, "dt=2026-12-01", "2026-12-01T00:00:00Z"},
		{nil, []string{"dt", "hr"}, "dt=2026-12-01/hr=10", "2026-12-01T00:00:00Z"},
		{map[string]string{"partition.time-extractor.timestamp-pattern": "$dt $hour:00:00"}, []string{"dt", "hour"}, "dt=2026-12-01/hour=10", "2026-12-01T10:00:00Z"},
		{map[string]string{"partition.time-extractor.timestamp-pattern": "$dt $hm:00"}, []string{"dt", "hm"}, "dt=2026-12-01/hm=10%3A05", "2026-12-01T10:05:00Z"},
		{map[string]string{"partition.time-extractor.timestamp-pattern": "$d$h", "partition.time-extractor.timestamp-formatter": "yyyyMMddHH"}, []string{"d", "h"}, "d=20261201/h=07", "2026-12-01T07:00:00Z"},
		{map[string]string{"partition.time-extractor.timestamp-pattern": "$dt $hour:00:00", "sink.partition-commit.watermark-time-zone": "Asia/Shanghai"}, []string{"dt", "hour"}, "dt=2026-12-01/hour=10", "2026-12-01T02:00:00Z"},
		{nil, []string{"dt"}, "dt=yesterday", ""},
		{nil, []string{"dt"}, "nokey", ""},
	} {
		opts := map[string]string{"connector": "filesystem"}
		for k, v := range c.opts {
			opts[k] = v
		}
		o := connector.NewOptions(&connector.Table{Name: "t", Options: opts})
		extract := partitionTimeExtractor(o, c.names)
		if extract == nil {
			t.Fatalf("%v: %v", c.opts, o.Err())
		}
		got, err := extract(c.dir)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%v %s: %v, want an error", c.opts, c.dir, got)
		case c.want != "" && (err != nil || got.UTC().Format(time.RFC3339) != c.want):
			t.Errorf("%v %s: %v, %v; want %s", c.opts, c.dir, got.UTC(), err, c.want)
		}
	}
}
