// Package builtin registers weir's built-in table connectors and formats
// with packages sql/connector and sql/format. Import it for its side
// effects:
//
//	import _ "github.com/weirstream/weir/sql/connector/builtin"
package builtin
