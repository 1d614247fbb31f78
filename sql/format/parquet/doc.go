// Package parquet is the SQL layer's Parquet format, for the filesystem
// connector's 'format' = 'parquet': a bulk format, written a file at a
// time through connector/file's BulkWriter (a part file is complete at a
// checkpoint) and read a column at a time.
//
// The schema of a file is built once from the table's columns, in their
// order; rows are shredded into Parquet values (definition and repetition
// levels computed here, Dremel's scheme) and handed to
// github.com/parquet-go/parquet-go's Writer in batches: no reflection per
// record. Reading decodes only the leaf columns of the values a query
// reads (Target), page by page, and converts each to the table's type;
// columns are matched by name, and one the file lacks is taken from the
// file's Hive-style partition directory or is a *SchemaError naming it.
//
// Type mapping (weir → Parquet): BOOLEAN → BOOLEAN; TINYINT, SMALLINT →
// INT32 (INT(8), INT(16)); INT → INT32; BIGINT → INT64; FLOAT → FLOAT;
// DOUBLE → DOUBLE; DECIMAL(p, s) → DECIMAL on INT32 (p <= 9), INT64
// (p <= 18) or FIXED_LEN_BYTE_ARRAY; CHAR, VARCHAR, STRING → BINARY
// (STRING); BINARY, VARBINARY → BINARY; DATE → INT32 (DATE); TIME → INT32
// (TIME millis); TIMESTAMP → INT64 (TIMESTAMP micros, not adjusted to UTC)
// and TIMESTAMP_LTZ → INT64 (TIMESTAMP micros, adjusted to UTC), or INT96
// with 'parquet.write.int64.timestamp' = 'false'; ARRAY → LIST; MAP → MAP;
// ROW → a group. INTERVAL and MULTISET have no mapping. See
// docs/format-parquet.md.
package parquet
