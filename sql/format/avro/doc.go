// Package avro is the SQL layer's Avro formats, with Flink's names,
// options and type mapping:
//
//   - 'avro': a record is one Avro datum in the binary encoding, of the
//     schema derived from the table's columns as Flink's
//     AvroSchemaConverter derives it (DeriveSchema: a record named
//     org.apache.flink.avro.generated.record, nullable columns as
//     ["null", T] with default null), or of 'avro.schema' (a weir
//     extension);
//   - 'avro-confluent': Confluent's wire format (a zero byte, the writer
//     schema's registry id in 4 bytes big endian, the Avro body); the
//     schema is registered under 'avro-confluent.subject' (default
//     '<topic>-value' or '<topic>-key') once, on the first record written;
//     a record's writer schema is fetched by its id once per id;
//   - 'debezium-avro-confluent': Debezium's change events in Avro through
//     the registry, read into a changelog as 'debezium-json' reads them,
//     written as Flink writes them (before, after, op).
//
// On the filesystem connector, 'avro' is Flink's bulk format of Avro
// object-container files (ocf.go): OCFWriter writes a file's header and
// its blocks of rows (codecs null, deflate, snappy, zstandard, by
// 'avro.codec'); FileDecoders and OCFReader read files with each file's
// own schema resolved against the table's, from a checkpointed position
// (a block's offset and the records of it read).
//
// Reading resolves the writer's schema against the table's (Avro's schema
// resolution): fields are matched by name, a field the table lacks is
// skipped, a column the writer lacks takes the reader schema's default
// (NULL for a nullable column), int is promoted to long, float and double,
// float to double, string and bytes read as each other; so a producer's
// evolved schema is read without a restart.
//
// The decoders and encoders are compiled once per schema pair into
// closures over the row layout (no reflection, no maps, no generic Avro
// values): github.com/hamba/avro/v2 parses schemas, and this package
// reads and writes the binary encoding itself. franz-go's pkg/sr is the
// registry client.
package avro
