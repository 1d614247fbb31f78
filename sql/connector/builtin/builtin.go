// Package builtin registers weir's built-in table connectors and formats
// with packages sql/connector and sql/format. Import it for its side
// effects:
//
//	import _ "github.com/weirstream/weir/sql/connector/builtin"
package builtin

import (
	// Formats.
	_ "github.com/weirstream/weir/sql/format/avro"
	_ "github.com/weirstream/weir/sql/format/csv"
	_ "github.com/weirstream/weir/sql/format/debezium"
	_ "github.com/weirstream/weir/sql/format/json"
	_ "github.com/weirstream/weir/sql/format/protobuf"
	_ "github.com/weirstream/weir/sql/format/raw"

	// Connectors.
	_ "github.com/weirstream/weir/sql/connector/datagen"
	_ "github.com/weirstream/weir/sql/connector/filesystem"
	_ "github.com/weirstream/weir/sql/connector/jdbc"
	_ "github.com/weirstream/weir/sql/connector/kafka"
	_ "github.com/weirstream/weir/sql/connector/nexmark"
	_ "github.com/weirstream/weir/sql/connector/postgrescdc"
	_ "github.com/weirstream/weir/sql/connector/print"
	_ "github.com/weirstream/weir/sql/connector/weirlog"
)
