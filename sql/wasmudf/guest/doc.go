// Package guest is the WebAssembly side of weir's SQL UDF ABI, for
// functions written in Go and built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o f.wasm .
//
// A module built with it exports weir_buffer (its argument buffer) and, per
// SQL function f, f (the call: Scalar, or Table for a table function) and
// f_signature (its SQL types); an aggregate exports f_accumulate, f_result
// and, optionally, f_retract and f_merge instead of f. See docs/udf-wasm.md for the ABI, which a module in
// any language can implement, and sql/wasmudf for the host.
//
//	//go:wasmexport count_char
//	func countChar(n int32) int64 {
//		return guest.Scalar(n, func(args []guest.Value) (guest.Value, error) { ... })
//	}
//
//	//go:wasmexport count_char_signature
//	func countCharSignature() int64 { return guest.Signature("STRING, STRING -> BIGINT") }
//
// The package's code builds for wasip1 only; on other platforms it is this
// comment.
package guest
