package planner

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/weirstream/weir/sql/connector"
)

// countingValues is the values connector, counting the sources it creates.
type countingValues struct{ valuesFactory }

var countingSources atomic.Int64

func (countingValues) Identifier() string { return "values-counting" }

func (f countingValues) CreateSource(t *connector.Table) (*connector.Source, error) {
	countingSources.Add(1)
	return f.valuesFactory.CreateSource(t)
}

func init() { connector.Register(countingValues{}) }

// The INSERTs of one script are one statement set, planned together as
// Flink does: a table they all read is one source (Flink's source reuse),
// which group mode needs (a Kafka topic read by two sources of one job
// is refused there: the group assigns each partition once). DDL between
// two INSERTs starts a new plan, so the second one sees it.
func TestStatementSetReadsATableOnce(t *testing.T) {
	values.mu.Lock()
	values.data["set-reuse"] = []string{"+I 1, 10", "+I 2, 20", "+I 1, 30"}
	values.mu.Unlock()
	countingSources.Store(0)
	s := NewSession()
	job, err := s.Plan(`
CREATE TABLE t (k INT, v INT) WITH ('connector' = 'values-counting', 'data-id' = 'set-reuse');
CREATE TABLE reuse_a (k INT, v INT) WITH ('connector' = 'values');
CREATE TABLE reuse_b (k INT, n BIGINT) WITH ('connector' = 'values');
INSERT INTO reuse_a SELECT k, v FROM t WHERE v > 10;
INSERT INTO reuse_b SELECT k, COUNT(*) FROM t GROUP BY k;
CREATE VIEW big AS SELECT k, v FROM t WHERE v > 20;
INSERT INTO reuse_a SELECT k, v FROM big;
`)
	if err != nil {
		t.Fatal(err)
	}
	// The first two INSERTs share t's source (each its own before: 4);
	// CREATE VIEW plans its query to check it; the third INSERT, after
	// it, has its own.
	if n := countingSources.Load(); n != 3 {
		t.Fatalf("%d sources created for table t, want 3 (one per plan between DDL statements, and the view's check)", n)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	values.mu.Lock()
	a, b := len(values.sinks["reuse_a"]), len(values.sinks["reuse_b"])
	values.mu.Unlock()
	// reuse_a: 20, 30 and again 30; reuse_b: +I 1, +I 2, -U/+U 1.
	if a != 3 || b != 4 {
		t.Fatalf("reuse_a has %d rows, reuse_b %d; want 3 and 4", a, b)
	}
}
