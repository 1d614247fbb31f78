package sql_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/types"
)

// A Go program registers its functions on the session and calls them from
// SQL: a scalar function and an aggregate over an updating input.
func TestGoFunctions(t *testing.T) {
	var out lockedBuffer // the two SELECTs' sinks print from their own tasks
	double := &sql.ScalarFunction{
		Args: []types.Type{types.BigIntType}, Returns: types.BigIntType,
		Eval: func(a []types.Value) (types.Value, error) { return types.IntValue(2 * a[0].I), nil },
	}
	// product of the values, as [product, count of zeros] to retract
	prod := func(sign int64) func(acc types.Value, a []types.Value) (types.Value, error) {
		return func(acc types.Value, a []types.Value) (types.Value, error) {
			l := acc.List()
			switch {
			case a[0].I == 0:
				l[1].I += sign
			case sign > 0:
				l[0].I *= a[0].I
			default:
				l[0].I /= a[0].I
			}
			return acc, nil
		}
	}
	product := &sql.AggregateFunction{
		Args: []types.Type{types.BigIntType}, Returns: types.BigIntType,
		Create:     func() types.Value { return types.ListValue([]types.Value{types.IntValue(1), types.IntValue(0)}) },
		Accumulate: prod(1), Retract: prod(-1),
		Result: func(acc types.Value) (types.Value, error) {
			if l := acc.List(); l[1].I == 0 {
				return l[0], nil
			}
			return types.IntValue(0), nil
		},
	}
	s := sql.NewSession(sql.Stdout(&out), sql.WithFunction("double_it", double))
	if err := s.RegisterFunction("Product", product); err != nil {
		t.Fatal(err)
	}
	job, err := s.Plan(`SELECT double_it(x) FROM (VALUES (1), (2), (CAST(NULL AS BIGINT))) AS t(x);
SELECT PRODUCT(n) FROM (SELECT k, COUNT(*) AS n FROM (VALUES (1), (1), (2), (2), (2)) AS t(k) GROUP BY k)`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"+I[2]", "+I[4]", "+I[NULL]"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
	// the product's last value is 2*3 whatever order the updates came in
	lines := strings.Split(strings.TrimSpace(got), "\n")
	var last string
	for _, l := range lines {
		if strings.HasPrefix(l, "+U[") || strings.HasPrefix(l, "+I[") && !strings.Contains("+I[2] +I[4] +I[NULL]", l) {
			last = l
		}
	}
	if last != "+U[6]" {
		t.Errorf("the product's last row is %q, want +U[6]:\n%s", last, got)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
