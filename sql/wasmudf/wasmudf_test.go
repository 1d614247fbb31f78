package wasmudf_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/types"
	"github.com/weirstream/weir/sql/wasmudf"
	"github.com/weirstream/weir/sql/wasmudf/wasmtest"
)

func load(t testing.TB, export string, timeout time.Duration) expr.Function {
	t.Helper()
	b, err := os.ReadFile(wasmtest.Module(t))
	if err != nil {
		t.Fatal(err)
	}
	f, err := wasmudf.Load(b, "udfs.wasm", export, wasmudf.Options{CallTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestScalar(t *testing.T) {
	f := load(t, "count_char", 0).(*expr.ScalarFunction)
	if len(f.Args) != 2 || f.Returns.Kind != types.BigInt || !f.Returns.NotNull || !f.CallOnNull {
		t.Fatalf("signature: %v -> %v callOnNull=%v", f.Args, f.Returns, f.CallOnNull)
	}
	for _, c := range []struct {
		s, c types.Value
		want int64
	}{
		{types.StringValue("cacao c"), types.StringValue("c"), 3},
		{types.NullValue, types.StringValue("c"), 0},
		{types.StringValue(strings.Repeat("xc", 5000)), types.StringValue("c"), 5000}, // grows the buffer
		{types.StringValue(""), types.StringValue("c"), 0},
	} {
		v, err := f.Eval([]types.Value{c.s, c.c})
		if err != nil || v.I != c.want {
			t.Errorf("count_char(%q, %q) = %v, %v; want %d", c.s.S[:min(len(c.s.S), 10)], c.c.S, v, err, c.want)
		}
	}
	h := load(t, "half", 0).(*expr.ScalarFunction)
	if v, err := h.Eval([]types.Value{types.IntValue(3)}); err != nil || v.Float() != 1.5 {
		t.Errorf("half(3) = %v, %v", v.Float(), err)
	}
}

func TestErrorsAndTraps(t *testing.T) {
	f := load(t, "fail_on_two", 0).(*expr.ScalarFunction)
	if v, err := f.Eval([]types.Value{types.IntValue(1)}); err != nil || v.I != 1 {
		t.Fatalf("fail_on_two(1) = %v, %v", v, err)
	}
	if _, err := f.Eval([]types.Value{types.IntValue(2)}); err == nil || err.Error() != "two is not allowed" {
		t.Fatalf("fail_on_two(2): %v", err)
	}
	tr := load(t, "trap_on_three", 0).(*expr.ScalarFunction)
	_, err := tr.Eval([]types.Value{types.IntValue(3)})
	if err == nil || !strings.Contains(err.Error(), "the module trapped") || !strings.Contains(err.Error(), "assignment to entry in nil map") {
		t.Fatalf("trap_on_three(3): %v, want a trap with the panic's message", err)
	}
	// the pool goes on with a fresh instance
	if v, err := tr.Eval([]types.Value{types.IntValue(4)}); err != nil || v.I != 4 {
		t.Fatalf("trap_on_three(4) after a trap = %v, %v", v, err)
	}
}

func TestTimeout(t *testing.T) {
	f := load(t, "spin_on_three", 50*time.Millisecond).(*expr.ScalarFunction)
	if v, err := f.Eval([]types.Value{types.IntValue(1)}); err != nil || v.I != 1 {
		t.Fatalf("spin_on_three(1) = %v, %v", v, err)
	}
	_, err := f.Eval([]types.Value{types.IntValue(3)})
	if err == nil || !strings.Contains(err.Error(), "did not return within 50ms") {
		t.Fatalf("spin_on_three(3): %v, want the call stopped at its limit", err)
	}
}

func TestAggregate(t *testing.T) {
	f := load(t, "total", 0).(*expr.AggregateFunction)
	if f.Retract == nil || f.Merge == nil {
		t.Fatal("total has retract and merge exports")
	}
	acc := types.NullValue
	var err error
	for _, x := range []int64{5, 7, 11} {
		if acc, err = f.Accumulate(acc, []types.Value{types.IntValue(x)}); err != nil {
			t.Fatal(err)
		}
	}
	if acc, err = f.Retract(acc, []types.Value{types.IntValue(7)}); err != nil {
		t.Fatal(err)
	}
	other, _ := f.Accumulate(types.NullValue, []types.Value{types.IntValue(100)})
	if acc, err = f.Merge(acc, other); err != nil {
		t.Fatal(err)
	}
	v, err := f.Result(acc)
	if err != nil || v.I != 116 {
		t.Fatalf("total = %v, %v; want 116", v, err)
	}
	if v, _ := f.Result(types.NullValue); v.I != 0 {
		t.Fatalf("total of nothing = %v", v)
	}
}

func TestBadModules(t *testing.T) {
	if _, err := wasmudf.Load([]byte("not wasm"), "x.wasm", "f", wasmudf.Options{}); err == nil || !strings.Contains(err.Error(), "x.wasm is not a WebAssembly module") {
		t.Fatalf("garbage: %v", err)
	}
	b, err := os.ReadFile(wasmtest.Module(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wasmudf.Load(b, "udfs.wasm", "nope", wasmudf.Options{}); err == nil || !strings.Contains(err.Error(), "exports no nope_signature") {
		t.Fatalf("missing export: %v", err)
	}
}
