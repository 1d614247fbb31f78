package kafka_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const metaTable = `CREATE TABLE src (
  id BIGINT,
  name STRING,
  ` + "`offset`" + ` BIGINT METADATA VIRTUAL,
  part INT METADATA FROM 'partition' VIRTUAL,
  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  hdrs MAP<STRING, BYTES> METADATA FROM 'headers',
  tt STRING METADATA FROM 'timestamp-type' VIRTUAL,
  k BYTES METADATA FROM 'key' VIRTUAL,
  tp STRING METADATA FROM 'topic' VIRTUAL,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'in', 'properties.bootstrap.servers' = '@', 'format' = 'json', 'scan.bounded.mode' = 'latest-offset');
`

// Flink's Kafka metadata columns: read (offset, partition, timestamp,
// headers, timestamp-type, topic, and weir's key), a watermark on the
// record timestamp, and written (timestamp, headers) by a sink whose
// declared types are cast to the connector's.
func TestMetadataColumns(t *testing.T) {
	servers := cluster(t, "in", "out", "back")
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	produce(t, servers,
		&kgo.Record{Topic: "in", Partition: 0, Key: []byte("k1"), Value: []byte(`{"id":1,"name":"a"}`), Timestamp: base.Add(10 * time.Second),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}},
		&kgo.Record{Topic: "in", Partition: 0, Value: []byte(`{"id":2,"name":"b"}`), Timestamp: base.Add(70 * time.Second)},
		&kgo.Record{Topic: "in", Partition: 1, Key: []byte("k3"), Value: []byte(`{"id":3,"name":"c"}`), Timestamp: base.Add(20 * time.Second),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("y")}, {Key: "n"}}},
	)
	table := strings.Replace(metaTable, "'@'", "'"+servers+"'", 1)

	got, err := runSQL(t, table+"SELECT id, name, `offset`, part, ts, CAST(hdrs['h'] AS STRING), hdrs['n'] IS NULL, CARDINALITY(hdrs), tt, CAST(k AS STRING), tp FROM src;")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"+I[1, a, 0, 0, 2026-12-01 10:00:10.000, x, TRUE, 1, CreateTime, k1, in]",
		"+I[2, b, 1, 0, 2026-12-01 10:01:10.000, NULL, TRUE, 0, CreateTime, NULL, in]",
		"+I[3, c, 0, 1, 2026-12-01 10:00:20.000, y, TRUE, 2, CreateTime, k3, in]",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("metadata read:\n got %q\nwant %q", got, want)
	}

	// a metadata column declared first: SELECT * keeps the declared order,
	// and so does an INSERT without a column list
	got, err = runSQL(t, `CREATE TABLE first (p INT METADATA FROM 'partition' VIRTUAL, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', id BIGINT, name STRING)
WITH ('connector' = 'kafka', 'topic' = 'in', 'properties.bootstrap.servers' = '`+servers+`', 'format' = 'json', 'scan.bounded.mode' = 'latest-offset');
CREATE TABLE back (ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'back', 'properties.bootstrap.servers' = '`+servers+`', 'format' = 'json');
SELECT * FROM first WHERE id = 1;
INSERT INTO back SELECT ts, id FROM first;`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"+I[0, 2026-12-01 10:00:10.000, 1, a]"}; !slices.Equal(got, want) {
		t.Fatalf("metadata declared first:\n got %q\nwant %q", got, want)
	}
	if recs, want := consume(t, servers, "back", 3), []string{`{"id":1} 10:00:10 `, `{"id":2} 10:01:10 `, `{"id":3} 10:00:20 `}; !slices.Equal(recs, want) {
		t.Fatalf("records written with the metadata column first:\n got %q\nwant %q", recs, want)
	}

	// the record timestamp is the rowtime: one-minute windows close on it
	got, err = runSQL(t, table+`SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end;`)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"+I[2026-12-01 10:00:00.000, 2]", "+I[2026-12-01 10:01:00.000, 1]"}
	if !slices.Equal(got, want) {
		t.Fatalf("windows on the metadata rowtime:\n got %q\nwant %q", got, want)
	}

	// a sink writes timestamp (declared TIMESTAMP(3): cast to the
	// connector's TIMESTAMP_LTZ(3)) and headers; VIRTUAL columns are not
	// written and not given by the query
	_, err = runSQL(t, table+`CREATE TABLE dst (
  id BIGINT,
  ts TIMESTAMP(3) METADATA FROM 'timestamp',
  hs MAP<STRING, BYTES> METADATA FROM 'headers',
  off BIGINT METADATA FROM 'offset' VIRTUAL
) WITH ('connector' = 'kafka', 'topic' = 'out', 'properties.bootstrap.servers' = '`+servers+`', 'format' = 'json');
INSERT INTO dst SELECT id, CAST(ts AS TIMESTAMP(3)) + INTERVAL '1' HOUR, MAP['src', CAST(name AS BYTES)] FROM src;`)
	if err != nil {
		t.Fatal(err)
	}
	recs := consume(t, servers, "out", 3)
	wantRecs := []string{`{"id":1} 11:00:10 src=a`, `{"id":2} 11:01:10 src=b`, `{"id":3} 11:00:20 src=c`}
	if !slices.Equal(recs, wantRecs) {
		t.Fatalf("records written:\n got %q\nwant %q", recs, wantRecs)
	}
}

func TestMetadataColumnErrors(t *testing.T) {
	for _, c := range []struct{ ddl, query, want string }{
		{"CREATE TABLE t (id BIGINT, x BIGINT METADATA FROM 'nope') WITH ('connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'x:1', 'format' = 'json')",
			"SELECT * FROM t", "line 1, column 28: table 't': invalid metadata key 'nope' in column 'x': connector 'kafka' supports the following metadata keys for reading: topic, partition, headers, leader-epoch, offset, timestamp, timestamp-type, key"},
		{"CREATE TABLE t (id BIGINT, `offset` BIGINT METADATA) WITH ('connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'x:1', 'format' = 'json')",
			"INSERT INTO t SELECT 1, 2", "connector 'kafka' supports the following metadata keys for writing: headers, timestamp (declare a column that is only read VIRTUAL)"},
		{"CREATE TABLE t (id BIGINT, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') WITH ('connector' = 'datagen')",
			"SELECT * FROM t", "invalid metadata key 'timestamp' in column 'ts': connector 'datagen' has no metadata keys for reading"},
		{"CREATE TABLE t (id BIGINT, ts BOOLEAN METADATA FROM 'timestamp') WITH ('connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'x:1', 'format' = 'json')",
			"SELECT * FROM t", "metadata column 'ts' of 't': metadata key 'timestamp' is TIMESTAMP_LTZ(3) NOT NULL, which cannot be cast to BOOLEAN"},
	} {
		_, err := runSQL(t, c.ddl+";\n"+c.query+";")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n%s\n got error %v\nwant one with %q", c.ddl, c.query, err, c.want)
		}
	}
	// the table reads fine where its VIRTUAL column is not written
	if _, err := runSQL(t, "CREATE TABLE t (id BIGINT, `offset` BIGINT METADATA VIRTUAL) WITH ('connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'x:1', 'format' = 'json');\nEXPLAIN INSERT INTO t SELECT 1;"); err != nil {
		t.Errorf("a VIRTUAL metadata column: %v", err)
	}
}

// consume reads n records of topic: value, timestamp (UTC time of day)
// and headers, sorted.
func consume(t *testing.T, servers, topic string, n int) []string {
	t.Helper()
	var recs []string
	for _, r := range consumeRecords(t, servers, topic, n) {
		var hs []string
		for _, h := range r.Headers {
			hs = append(hs, h.Key+"="+string(h.Value))
		}
		recs = append(recs, string(r.Value)+" "+r.Timestamp.UTC().Format(time.TimeOnly)+" "+strings.Join(hs, ","))
	}
	slices.Sort(recs)
	return recs
}
