package sql_test

import (
	"slices"
	"testing"
)

// The local phase of a two-phase aggregation borrows the rows of the Calc
// before it (lend.go: the Calc writes them into a ring it reuses): over
// many batches of rows, with computed keys and strings, the result equals
// the one-phase aggregation's, which copies nothing.
func TestTwoPhaseAggregationOverLentRows(t *testing.T) {
	const src = `
CREATE TABLE src (id BIGINT, v BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '60000',
  'fields.id.kind' = 'random', 'fields.id.min' = '0', 'fields.id.max' = '999', 'fields.v.kind' = 'sequence', 'fields.v.start' = '1', 'fields.v.end' = '60000');
`
	query := `SELECT k, COUNT(*) AS n, SUM(w) AS total, MAX(s) AS top, MIN(s) AS bottom
FROM (SELECT MOD(id, 37) AS k, v * 2 AS w, CONCAT('s', CAST(MOD(v * 7919, 100003) AS STRING)) AS s FROM src) GROUP BY k;`
	onePhase := lines(t, src+query)
	twoPhase := lines(t, `SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 s';
SET 'table.exec.mini-batch.size' = '5000';
SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE';
`+src+query)
	if len(onePhase) != 37 || !slices.Equal(onePhase, twoPhase) {
		t.Fatalf("two phases over lent rows: %d rows, one phase %d; they differ\n%v\n%v", len(twoPhase), len(onePhase), twoPhase[:min(3, len(twoPhase))], onePhase[:min(3, len(onePhase))])
	}
}
