package parquet

import (
	"strings"

	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/gzip"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/uncompressed"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/weirstream/weir/sql/connector"
)

// Options are the 'parquet.*' options of a table, Flink's names.
type Options struct {
	// Compression is 'parquet.compression': UNCOMPRESSED (default, as
	// Flink's ParquetOutputFormat), SNAPPY, GZIP or ZSTD.
	Compression string
	codec       compress.Codec
	// BlockSize is 'parquet.block.size', the bytes of a row group before
	// it is written out (default 128 MiB).
	BlockSize int64
	// PageSize is 'parquet.page.size', the bytes of a page (default 1 MiB).
	PageSize int64
	// UTC is 'parquet.utc-timezone': INT96 timestamps are converted to and
	// from TIMESTAMP in UTC rather than the local time zone (default false,
	// as Flink; Hive 3 writes UTC).
	UTC bool
	// Int64Timestamp is 'parquet.write.int64.timestamp': TIMESTAMP and
	// TIMESTAMP_LTZ are written as INT64 TIMESTAMP logical types (weir's
	// default, true) rather than INT96 (Flink's default).
	Int64Timestamp bool
	// TimeUnit is 'parquet.timestamp.time.unit' for INT64 timestamps:
	// millis, micros (default) or nanos.
	TimeUnit string
	// Dictionary is 'parquet.enable.dictionary': string and bytes columns
	// are dictionary-encoded. Default false, unlike parquet-mr: with
	// parquet-go it cost a third of the write throughput of the 10-column
	// benchmark row and made its file no smaller (its strings are mostly
	// distinct); it pays for columns of few distinct values.
	Dictionary bool
}

// ParseOptions reads the 'parquet.*' options of a table; errors are
// reported by o.Err.
func ParseOptions(o *connector.Options) *Options {
	opts := &Options{
		Compression:    strings.ToUpper(o.Enum("parquet.compression", "UNCOMPRESSED", "UNCOMPRESSED", "SNAPPY", "GZIP", "ZSTD", "uncompressed", "snappy", "gzip", "zstd")),
		BlockSize:      o.MemorySize("parquet.block.size", 128<<20),
		PageSize:       o.MemorySize("parquet.page.size", 1<<20),
		UTC:            o.Bool("parquet.utc-timezone", false),
		Int64Timestamp: o.Bool("parquet.write.int64.timestamp", true),
		TimeUnit:       strings.ToLower(o.Enum("parquet.timestamp.time.unit", "micros", "millis", "micros", "nanos", "MILLIS", "MICROS", "NANOS")),
		Dictionary:     o.Bool("parquet.enable.dictionary", false),
	}
	if opts.BlockSize <= 0 {
		o.Invalid("parquet.block.size", "must be positive")
	}
	if opts.PageSize <= 0 || opts.PageSize > 1<<30 {
		o.Invalid("parquet.page.size", "must be positive and at most 1gb")
	}
	opts.setCodec()
	return opts
}

// DefaultOptions are the options of a table that sets none.
func DefaultOptions() *Options {
	o := &Options{Compression: "UNCOMPRESSED", BlockSize: 128 << 20, PageSize: 1 << 20, Int64Timestamp: true, TimeUnit: "micros"}
	o.setCodec()
	return o
}

func (o *Options) setCodec() {
	switch o.Compression {
	case "SNAPPY":
		o.codec = &snappy.Codec{}
	case "GZIP":
		o.codec = &gzip.Codec{}
	case "ZSTD":
		o.codec = &zstd.Codec{}
	default:
		o.codec = &uncompressed.Codec{}
	}
}
