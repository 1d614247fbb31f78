// Package avro reads and writes Go values as Apache Avro, for jobs on the
// DataStream API: the binary encoding of one schema (Codec), Confluent's
// wire format through a schema registry (Confluent), and object container
// files (ReadFile, NewFileWriter).
//
// Values are Go structs (fields matched to the schema's by their `avro`
// tags), maps and the other types github.com/hamba/avro/v2 maps; hamba
// compiles a codec per schema and Go type once and keeps it, so a record
// costs no reflection lookups beyond a cache hit.
//
// Reading resolves the schema the data was written with against the
// reader's schema (Avro's rules: a field the writer added is skipped, one
// it lacks takes the reader's default, int is promoted to long, float or
// double, and so on), so a producer may evolve its schema while a job
// runs. The writer schema of a Confluent record is fetched from the
// registry by the id in its header, once per id.
//
// With connector/kafka, a source decodes record values with a closure:
//
//	orders, err := avro.NewConfluent[Order](registry, orderSchema, avro.Subject("orders-value"))
//	...
//	src := kafka.Source(brokers, []string{"orders"}, func(r *kgo.Record) (Order, error) {
//		return orders.Decode(r.Value)
//	})
//
// The SQL layer's 'avro', 'avro-confluent' and 'debezium-avro-confluent'
// formats are package sql/format/avro.
package avro
