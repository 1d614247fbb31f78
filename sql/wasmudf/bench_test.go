package wasmudf_test

import (
	"testing"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

// BenchmarkCountChar compares one call of Nexmark's count_char as a
// WebAssembly function with its Go twin, over a bid's extra-sized string.
//
//	go test ./sql/wasmudf -run NONE -bench CountChar -benchmem
func BenchmarkCountChar(b *testing.B) {
	extra := types.StringValue("cqcDSbcccXcKcEjcAcbbYdVcccNcjWcTcccScc") // the generator's extra is ~40 chars
	args := []types.Value{extra, types.StringValue("c")}
	run := func(b *testing.B, f *expr.ScalarFunction) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := f.Eval(args)
			if err != nil || v.I != 19 {
				b.Fatalf("count_char = %v, %v", v.I, err)
			}
		}
	}
	b.Run("wasm", func(b *testing.B) { run(b, load(b, "count_char", 0).(*expr.ScalarFunction)) })
	b.Run("go", func(b *testing.B) { run(b, nexmarksql.CountChar) })
}
