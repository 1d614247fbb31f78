package avro_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	hamba "github.com/hamba/avro/v2"

	"github.com/weirstream/weir/internal/testing/certtest"
	"github.com/weirstream/weir/internal/testing/schemaregistry"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/avro"
	"github.com/weirstream/weir/sql/types"
)

func registry(t testing.TB, opts ...schemaregistry.Option) *schemaregistry.Server {
	t.Helper()
	s, err := schemaregistry.Start(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var orders = types.Schema{
	{Name: "id", Type: types.Type{Kind: types.BigInt, NotNull: true}},
	{Name: "item", Type: types.StringType},
	{Name: "qty", Type: types.IntType},
}

func order(id int64, item string, qty int64) types.Row {
	return types.Row{Values: []types.Value{{I: id}, {S: item}, {I: qty}}}
}

// withHeader prefixes an Avro body with the wire format's header.
func withHeader(id int, body []byte) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, body...)
}

func TestConfluentRoundTripAndCaches(t *testing.T) {
	reg := registry(t)
	opts := map[string]string{"connector": "kafka", "topic": "orders", "format": "avro-confluent", "avro-confluent.url": reg.URL}
	d, e := compile(t, orders, opts)
	rows := []types.Row{order(1, "apple", 3), order(2, "pear", 0), {Values: []types.Value{{I: 3}, types.NullValue, types.NullValue}}}
	var recs [][]byte
	for i := range rows {
		b, _, err := e.Encode(nil, &rows[i])
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, b)
	}
	// Registered once, under Flink's default subject.
	if n := reg.Hits("POST /subjects/{subject}/versions"); n != 1 {
		t.Fatalf("registered %d times, want once", n)
	}
	id, _, ok := reg.Latest("orders-value")
	if !ok {
		t.Fatal("nothing registered under orders-value")
	}
	for _, b := range recs {
		if b[0] != 0 || int(binary.BigEndian.Uint32(b[1:5])) != id {
			t.Fatalf("header % x, want magic 0 and id %d", b[:5], id)
		}
	}
	// The registered schema is the table's derived one, defaults included.
	sc, _ := reg.Schema(id)
	if !strings.Contains(sc.Text, `"default":null`) || !strings.Contains(sc.Text, `"org.apache.flink.avro.generated.record"`) {
		t.Fatalf("registered schema %s", sc.Text)
	}
	var got []types.Row
	for range 3 { // read them three times: the schema is fetched once
		for _, b := range recs {
			var err error
			if got, err = d.Decode(b, got); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, r := range got {
		r.Kind = types.Insert
		if !r.Equal(rows[i%3]) {
			t.Fatalf("row %d: %+v, want %+v", i, r, rows[i%3])
		}
	}
	if n := reg.Hits("GET /schemas/ids/{id}"); n != 1 {
		t.Fatalf("fetched the schema %d times, want once", n)
	}
}

// A producer that evolved its schema (a field added with a default, one
// removed, int promoted to long) writes records the table's decoder reads
// without a restart, interleaved with the old schema's.
func TestConfluentEvolution(t *testing.T) {
	reg := registry(t)
	v1 := `{"type":"record","name":"order","fields":[{"name":"id","type":"long"},{"name":"item","type":["null","string"]},{"name":"qty","type":"int"}]}`
	v2 := `{"type":"record","name":"order","fields":[{"name":"id","type":"long"},{"name":"qty","type":"long"},{"name":"note","type":"string","default":""}]}`
	id1 := reg.Register("orders-value", "AVRO", v1)
	id2 := reg.Register("orders-value", "AVRO", v2)
	s1, _ := avro.Parse(v1)
	s2, _ := avro.Parse(v2)
	b1, err := hamba.Marshal(s1, map[string]any{"id": int64(1), "item": map[string]any{"string": "apple"}, "qty": int32(3)})
	if err != nil {
		t.Fatal(err)
	}
	b2, err := hamba.Marshal(s2, map[string]any{"id": int64(2), "qty": int64(1 << 40), "note": "big"})
	if err != nil {
		t.Fatal(err)
	}
	table := types.Schema{orders[0], orders[1], {Name: "qty", Type: types.BigIntType}}
	d := compileDecoder(t, table, map[string]string{"format": "avro-confluent", "avro-confluent.url": reg.URL})
	var got []types.Row
	for _, rec := range [][]byte{withHeader(id1, b1), withHeader(id2, b2), withHeader(id1, b1)} {
		if got, err = d.Decode(rec, got); err != nil {
			t.Fatal(err)
		}
	}
	want := []types.Row{
		{Values: []types.Value{{I: 1}, {S: "apple"}, {I: 3}}},
		{Values: []types.Value{{I: 2}, types.NullValue, {I: 1 << 40}}},
		{Values: []types.Value{{I: 1}, {S: "apple"}, {I: 3}}},
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// A writer schema that cannot resolve (a string where the table has a
	// BIGINT) is an error naming the id and the field.
	id3 := reg.Register("orders-value", "AVRO", `{"type":"record","name":"order","fields":[{"name":"id","type":"string"}]}`)
	_, err = d.Decode(withHeader(id3, []byte{0x02, 'x'}), nil)
	if err == nil || !strings.Contains(err.Error(), "schema id 3") || !strings.Contains(err.Error(), "field 'id'") {
		t.Fatalf("unresolvable writer schema: %v", err)
	}
	_ = id3
}

func TestConfluentBadRecords(t *testing.T) {
	reg := registry(t)
	id := reg.Register("x", "AVRO", `{"type":"record","name":"order","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"}]}`)
	pb := reg.Register("p", "PROTOBUF", `syntax = "proto3"; message M {}`)
	opts := map[string]string{"format": "avro-confluent", "avro-confluent.url": reg.URL}
	d := compileDecoder(t, orders[:2], opts)
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{[]byte{1, 0, 0, 0, 1, 2}, "avro-confluent: not the Confluent wire format: magic byte 0x01 at byte 0, want 0x00"},
		{[]byte{0, 0, 0}, "avro-confluent: a record of 3 bytes is shorter than the 5-byte header"},
		{withHeader(999, []byte{2}), "avro-confluent: schema id 999: schema id not found in the registry (Schema 999 not found)"},
		{withHeader(id, []byte{0x02, 0x08, 'a'}), "avro: field 'item': truncated record at byte 8"},
		{withHeader(pb, []byte{0}), "avro-confluent: schema id 2: a PROTOBUF schema, not Avro"},
	} {
		_, err := d.Decode(c.in, nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("% x: %v, want %q", c.in, err, c.want)
		}
	}
	// ignore-parse-errors skips them all.
	opts["avro-confluent.ignore-parse-errors"] = "true"
	d = compileDecoder(t, orders[:2], opts)
	var skip *format.SkipError
	for _, in := range [][]byte{{1, 0, 0, 0, 1, 2}, {0}, withHeader(999, []byte{2}), withHeader(id, []byte{2})} {
		if _, err := d.Decode(in, nil); !errors.As(err, &skip) {
			t.Errorf("% x with ignore-parse-errors: %v", in, err)
		}
	}
	// The registry being down is not the record's fault: not skipped.
	reg.Close()
	if _, err := d.Decode(withHeader(7, []byte{2}), nil); err == nil || errors.As(err, &skip) {
		t.Fatalf("registry down: %v", err)
	}
}

func TestConfluentOptions(t *testing.T) {
	reg := registry(t, schemaregistry.BasicAuth("fred", "secret"))
	row := order(1, "a", 1)
	// Key formats register under '<topic>-key'.
	o := connector.NewOptions(&connector.Table{Name: "t", Options: map[string]string{
		"connector": "kafka", "topic": "orders", "key.format": "avro-confluent", "key.avro-confluent.url": reg.URL,
		"key.avro-confluent.basic-auth.credentials-source": "USER_INFO", "key.avro-confluent.basic-auth.user-info": "fred:secret",
	}})
	e, _ := format.NewEncoder(o, "key.format", orders)
	o.Declare("topic")
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Encode(nil, &row); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := reg.Latest("orders-key"); !ok {
		t.Fatal("nothing under orders-key")
	}
	// Flink's older keys and an explicit subject; credentials in the URL.
	url := strings.Replace(reg.URL, "http://", "http://fred:secret@", 1)
	_, e = compile(t, orders, map[string]string{"connector": "kafka", "topic": "orders", "format": "avro-confluent",
		"avro-confluent.schema-registry.url": url, "avro-confluent.schema-registry.subject": "custom",
		"avro-confluent.basic-auth.credentials-source": "URL"})
	if _, _, err := e.Encode(nil, &row); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := reg.Latest("custom"); !ok {
		t.Fatal("nothing under the subject 'custom'")
	}
	// Without credentials: the registry's refusal.
	_, e = compile(t, orders, map[string]string{"connector": "kafka", "topic": "orders", "format": "avro-confluent", "avro-confluent.url": reg.URL})
	if _, _, err := e.Encode(nil, &row); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without credentials: %v", err)
	}
	// Without auto-registration the schema must be there.
	_, e = compile(t, orders, map[string]string{"connector": "kafka", "topic": "other", "format": "avro-confluent", "avro-confluent.url": reg.URL,
		"avro-confluent.basic-auth.user-info": "fred:secret", "avro-confluent.auto.register.schemas": "false"})
	if _, _, err := e.Encode(nil, &row); err == nil || !strings.Contains(err.Error(), "auto.register.schemas is false") {
		t.Fatalf("no auto-registration: %v", err)
	}
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"format": "avro-confluent"}, "missing required option 'avro-confluent.url'"},
		{map[string]string{"connector": "filesystem", "format": "avro-confluent", "avro-confluent.url": reg.URL}, "'avro-confluent.subject' is required to write"},
		{map[string]string{"format": "avro-confluent", "avro-confluent.url": reg.URL, "avro-confluent.basic-auth.credentials-source": "SASL_INHERIT"}, "SASL_INHERIT' is not supported"},
		{map[string]string{"format": "avro-confluent", "avro-confluent.url": reg.URL, "avro-confluent.ssl.truststore.location": "/nonexistent.pem"}, "ssl.truststore.location"},
		{map[string]string{"format": "avro-confluent", "avro-confluent.url": reg.URL, "avro-confluent.schema": "{"}, "schema:"},
	} {
		if err := compileErr(orders, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.opts, err, c.want)
		}
	}
}

// TLS with the registry's certificate in 'ssl.truststore.location' (a PEM
// file), and a bearer token.
func TestConfluentTLSAndBearer(t *testing.T) {
	reg := registry(t, schemaregistry.TLS(), schemaregistry.BearerToken("tok"))
	pemFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(pemFile, reg.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"connector": "kafka", "topic": "orders", "format": "avro-confluent", "avro-confluent.url": reg.URL}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	row := order(1, "a", 2)
	d, e := compile(t, orders, with("avro-confluent.ssl.truststore.location", pemFile,
		"avro-confluent.bearer-auth.credentials-source", "STATIC_TOKEN", "avro-confluent.bearer-auth.token", "tok"))
	b, _, err := e.Encode(nil, &row)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := d.Decode(b, nil)
	if err != nil || len(rows) != 1 || !rows[0].Equal(types.Row{Kind: types.Insert, Values: row.Values}) {
		t.Fatalf("decoded %+v, %v", rows, err)
	}
	// Without the trust store the certificate is unknown; with a wrong
	// token the registry refuses.
	_, e = compile(t, orders, with("avro-confluent.bearer-auth.token", "tok"))
	if _, _, err := e.Encode(nil, &row); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("no trust store: %v", err)
	}
	_, e = compile(t, orders, with("avro-confluent.ssl.truststore.location", pemFile, "avro-confluent.bearer-auth.token", "nope"))
	if _, _, err := e.Encode(nil, &row); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("wrong token: %v", err)
	}
	// Java's trust stores, as Confluent's client reads them (keytool's
	// JKS and PKCS12; the type from the file)
	for _, typ := range []string{"JKS", "PKCS12"} {
		store := certtest.TrustStore(t, t.TempDir(), typ, "storepw", reg.CertPEM)
		_, e = compile(t, orders, with("avro-confluent.ssl.truststore.location", store, "avro-confluent.ssl.truststore.password", "storepw",
			"avro-confluent.bearer-auth.token", "tok"))
		if _, _, err := e.Encode(nil, &row); err != nil {
			t.Fatalf("%s trust store: %v", typ, err)
		}
	}
}

// Decoders and encoders are shared by a source's or sink's goroutines:
// concurrent first uses of two ids fetch each once, under -race.
func TestConfluentConcurrent(t *testing.T) {
	reg := registry(t)
	v1 := `{"type":"record","name":"o","fields":[{"name":"id","type":"long"},{"name":"item","type":["null","string"]},{"name":"qty","type":["null","int"]}]}`
	v2 := `{"type":"record","name":"o","fields":[{"name":"id","type":"long"},{"name":"qty","type":["null","int"]}]}`
	id1, id2 := reg.Register("s", "AVRO", v1), reg.Register("s", "AVRO", v2)
	recs := [][]byte{withHeader(id1, []byte{2, 2, 2, 'x', 2, 4}), withHeader(id2, []byte{4, 0})}
	want := []types.Row{order(1, "x", 2), {Values: []types.Value{{I: 2}, types.NullValue, types.NullValue}}}
	d, e := compile(t, orders, map[string]string{"connector": "kafka", "topic": "c", "format": "avro-confluent", "avro-confluent.url": reg.URL})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := (g + i) % 2
				rows, err := d.Decode(recs[k], nil)
				if err != nil {
					errs <- err
					return
				}
				if len(rows) != 1 || !rows[0].Equal(types.Row{Kind: types.Insert, Values: want[k].Values}) {
					errs <- fmt.Errorf("record %d: %+v", k, rows)
					return
				}
				if _, _, err := e.Encode(nil, &want[0]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := reg.Hits("GET /schemas/ids/{id}"); n != 2 {
		t.Fatalf("fetched %d times, want 2 (once per id)", n)
	}
	if n := reg.Hits("POST /subjects/{subject}/versions"); n != 1 {
		t.Fatalf("registered %d times, want once", n)
	}
}
