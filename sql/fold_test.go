package sql_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql"
)

// A constant expression that fails (division by zero) is an error when the
// statement is planned, as in Flink, not a panic of the process (issue 35).
func TestConstantDivisionByZeroIsAnError(t *testing.T) {
	for _, e := range []string{"1/0", "1 % 0", "MOD(5, 0)", "1.0/0", "CAST(1 AS DECIMAL(10, 2)) / 0", "CAST(7 AS DECIMAL(10, 2)) % 0", "2 + 3 * (4 / (2 - 2))"} {
		err := sql.Run(context.Background(), "SELECT "+e+";", sql.Stdout(io.Discard))
		if err == nil || !strings.Contains(err.Error(), "division by zero") {
			t.Errorf("SELECT %s: %v; want an error saying division by zero", e, err)
		}
	}
}

// An expression nested deeper than expr.MaxDepth (a flat chain of 20 K
// terms) is refused with an error naming the limit; one of 5 K terms runs
// (issue 35: 100 K terms ended the process with a stack overflow).
func TestDeepExpressionIsAnError(t *testing.T) {
	chain := func(n int, op string) string {
		return strings.TrimSuffix(strings.Repeat("1 "+op+" ", n), " "+op+" ")
	}
	for _, op := range []string{"+", "AND"} {
		term := "1"
		if op == "AND" {
			term = "TRUE"
		}
		deep := strings.ReplaceAll(chain(20_000, op), "1", term)
		err := sql.Run(context.Background(), "SELECT "+deep+";", sql.Stdout(io.Discard))
		if err == nil || !strings.Contains(err.Error(), "nested more than") {
			t.Errorf("20 K terms of %s: %v; want an error about the nesting", op, err)
		}
		if err := sql.Run(context.Background(), "SELECT "+strings.ReplaceAll(chain(5_000, op), "1", term)+";", sql.Stdout(io.Discard)); err != nil {
			t.Errorf("5 K terms of %s: %v", op, err)
		}
	}
}
