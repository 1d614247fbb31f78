// Command udfs is a WebAssembly module of SQL functions for weir's tests,
// built with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package main

import (
	"errors"
	"strings"

	"github.com/weirstream/weir/sql/wasmudf/guest"
)

func main() {}

//go:wasmexport count_char
func countChar(n int32) int64 {
	return guest.Scalar(n, func(a []guest.Value) (guest.Value, error) {
		if a[0].IsNull() || a[1].IsNull() || a[1].S == "" {
			return guest.IntValue(0), nil
		}
		return guest.IntValue(int64(strings.Count(a[0].S, a[1].S[:1]))), nil
	})
}

//go:wasmexport count_char_signature
func countCharSignature() int64 {
	return guest.Signature("STRING, STRING -> BIGINT NOT NULL CALLED ON NULL INPUT")
}

//go:wasmexport shout
func shout(n int32) int64 {
	return guest.Scalar(n, func(a []guest.Value) (guest.Value, error) {
		return guest.StringValue(strings.ToUpper(a[0].S) + "!"), nil
	})
}

//go:wasmexport shout_signature
func shoutSignature() int64 { return guest.Signature("STRING -> STRING") }

// half(x) is x / 2 as a DOUBLE; a NULL argument gives NULL without a call.
//
//go:wasmexport half
func half(n int32) int64 {
	return guest.Scalar(n, func(a []guest.Value) (guest.Value, error) {
		return guest.FloatValue(float64(a[0].I) / 2), nil
	})
}

//go:wasmexport half_signature
func halfSignature() int64 { return guest.Signature("BIGINT -> DOUBLE") }

// fail_on_two returns an error for 2.
//
//go:wasmexport fail_on_two
func failOnTwo(n int32) int64 {
	return guest.Scalar(n, func(a []guest.Value) (guest.Value, error) {
		if a[0].I == 2 {
			return guest.Value{}, errors.New("two is not allowed")
		}
		return a[0], nil
	})
}

//go:wasmexport fail_on_two_signature
func failOnTwoSignature() int64 { return guest.Signature("BIGINT -> BIGINT") }

// trap_on_three panics (the module traps) for 3.
//
//go:wasmexport trap_on_three
func trapOnThree(n int32) int64 {
	return guest.Scalar(n, func(a []guest.Value) (guest.Value, error) {
		if a[0].I == 3 {
			var m map[string]int
			m["boom"] = 1 // a nil map write: a Go panic, a trap of the module
		}
		return a[0], nil
	})
}

//go:wasmexport trap_on_three_signature
func trapOnThreeSignature() int64 { return guest.Signature("BIGINT -> BIGINT") }

var sink int64

// spin_on_three never returns for 3.
//
//go:wasmexport spin_on_three
func spinOnThree(n int32) int64 {
	return guest.Scalar(n, func(a []guest.Value) (guest.Value, error) {
		for a[0].I == 3 {
			sink++
		}
		return a[0], nil
	})
}

//go:wasmexport spin_on_three_signature
func spinOnThreeSignature() int64 { return guest.Signature("BIGINT -> BIGINT") }

// total(x) sums x, taking retracted rows back; its accumulator is the sum.
//
//go:wasmexport total_accumulate
func totalAccumulate(n int32) int64 {
	return guest.Aggregate(n, func(acc guest.Value, a []guest.Value) (guest.Value, error) {
		return guest.IntValue(acc.I + a[0].I), nil
	})
}

//go:wasmexport total_retract
func totalRetract(n int32) int64 {
	return guest.Aggregate(n, func(acc guest.Value, a []guest.Value) (guest.Value, error) {
		return guest.IntValue(acc.I - a[0].I), nil
	})
}

//go:wasmexport total_merge
func totalMerge(n int32) int64 {
	return guest.Aggregate(n, func(acc guest.Value, a []guest.Value) (guest.Value, error) {
		return guest.IntValue(acc.I + a[0].I), nil
	})
}

//go:wasmexport total_result
func totalResult(n int32) int64 {
	return guest.Aggregate(n, func(acc guest.Value, _ []guest.Value) (guest.Value, error) {
		if acc.IsNull() {
			return guest.IntValue(0), nil
		}
		return acc, nil
	})
}

//go:wasmexport total_signature
func totalSignature() int64 { return guest.Signature("BIGINT -> BIGINT NOT NULL") }

// split_words(s, sep) is a table function: a row (word, length) per part.
//
//go:wasmexport split_words
func splitWords(n int32) int64 {
	return guest.Table(n, func(a []guest.Value, emit func(row ...guest.Value)) error {
		if a[0].S == "" {
			return nil
		}
		for _, w := range strings.Split(a[0].S, a[1].S) {
			emit(guest.StringValue(w), guest.IntValue(int64(len(w))))
		}
		return nil
	})
}

//go:wasmexport split_words_signature
func splitWordsSignature() int64 {
	return guest.Signature("STRING, STRING -> TABLE<word STRING, length INT>")
}
