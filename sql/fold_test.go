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
