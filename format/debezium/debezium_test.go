package debezium_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/format/debezium"
)

type customer struct {
	ID    int    `json:"id"`
	Email string `json:"email"`
}

const (
	bare    = `{"before":{"id":1,"email":"a@x"},"after":{"id":1,"email":"b@x"},"op":"u","source":{"db":"shop","table":"customers","lsn":42},"ts_ms":1700000000000}`
	wrapped = `{"schema":{"type":"struct","fields":[]},"payload":{"before":null,"after":{"id":2,"email":"c@x"},"op":"r","source":{"snapshot":"true"},"ts_ms":5}}`
)

func TestDecodeBareAndWrapped(t *testing.T) {
	e, err := debezium.Decode[customer]([]byte(bare))
	if err != nil {
		t.Fatal(err)
	}
	if e.Op != "u" || e.TsMs != 1700000000000 || e.Before.Email != "a@x" || e.After.Email != "b@x" || !strings.Contains(string(e.Source), `"lsn":42`) {
		t.Fatalf("bare: %+v", e)
	}
	got := e.Changes(nil)
	want := []weir.Change[customer]{{Kind: weir.UpdateBefore, Value: customer{1, "a@x"}}, {Kind: weir.UpdateAfter, Value: customer{1, "b@x"}}}
	if !slices.Equal(got, want) {
		t.Fatalf("bare changes %v, want %v", got, want)
	}
	e, err = debezium.Decode[customer]([]byte(wrapped))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Changes(nil); !slices.Equal(got, []weir.Change[customer]{{Kind: weir.Insert, Value: customer{2, "c@x"}}}) {
		t.Fatalf("wrapped changes %v", got)
	}
	for _, tomb := range []string{"", "null", `{"schema":{},"payload":null}`} {
		e, err := debezium.Decode[customer]([]byte(tomb))
		if err != nil || !e.Tombstone() || len(e.Changes(nil)) != 0 {
			t.Fatalf("tombstone %q: %+v, %v", tomb, e, err)
		}
	}
	// An update without a before-image is an upsert.
	e, err = debezium.Decode[customer]([]byte(`{"before":null,"after":{"id":3},"op":"u"}`))
	if err != nil || !slices.Equal(e.Changes(nil), []weir.Change[customer]{{Kind: weir.UpdateAfter, Value: customer{ID: 3}}}) {
		t.Fatalf("upsert: %+v %v", e, err)
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ in, field, msg string }{
		{`{"after":{"id":1},"op":"x"}`, "op", "unsupported op"},
		{`{"op":"t"}`, "op", "unsupported op"},
		{`{"after":{"id":1}}`, "op", "missing"},
		{`{"before":null,"after":null,"op":"c"}`, "after", "null"},
		{`{"before":null,"after":{"id":1},"op":"d"}`, "before", "before-image"},
		{`{"before":null,"after":{"id":"one"},"op":"c"}`, "after", "string"},
		{`{"payload":{"op":"c","after":{"id":[]}}}`, "after", "array"},
		{`{"op":"c","after":{"id":1},"payload":{"op":"c"}}`, "", ""},
		{`{"op":`, "", "unexpected end"},
	} {
		_, err := debezium.Decode[customer]([]byte(c.in))
		var de *debezium.Error
		if c.field == "" && c.msg == "" {
			if err != nil {
				t.Fatalf("%s: %v", c.in, err)
			}
			continue
		}
		if !errors.As(err, &de) || de.Field != c.field || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%s: error %v; want field %q and %q", c.in, err, c.field, c.msg)
		}
	}
}

// TestEncoderRoundTrip encodes a changelog, decodes the events and gets
// the same changelog back, UpdateBefore/UpdateAfter pairs in one u event
// and an UpdateBefore without its UpdateAfter as a d event.
func TestEncoderRoundTrip(t *testing.T) {
	in := []weir.Change[customer]{
		{Kind: weir.Insert, Value: customer{1, "a"}},
		{Kind: weir.UpdateBefore, Value: customer{1, "a"}}, {Kind: weir.UpdateAfter, Value: customer{1, "b"}},
		{Kind: weir.UpdateAfter, Value: customer{2, "upsert"}},
		{Kind: weir.UpdateBefore, Value: customer{1, "b"}}, {Kind: weir.Delete, Value: customer{2, "upsert"}},
		{Kind: weir.UpdateBefore, Value: customer{3, "held"}},
	}
	enc := debezium.Encoder[customer]{Source: []byte(`{"name":"weir"}`)}
	var out []byte
	var err error
	for _, c := range in {
		if out, err = enc.Append(out, c, 7); err != nil {
			t.Fatal(err)
		}
	}
	if out, err = enc.Flush(out, 8); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	var ops []string
	var back []weir.Change[customer]
	for _, l := range lines {
		e, err := debezium.Decode[customer]([]byte(l))
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if string(e.Source) != `{"name":"weir"}` || e.TsMs < 7 {
			t.Fatalf("source/ts lost: %s", l)
		}
		ops = append(ops, e.Op)
		back = e.Changes(back)
	}
	if want := []string{"c", "u", "u", "d", "d", "d"}; !slices.Equal(ops, want) {
		t.Fatalf("ops %v, want %v", ops, want)
	}
	want := slices.Clone(in)
	want[4].Kind, want[6].Kind = weir.Delete, weir.Delete // retractions without their update
	if !slices.Equal(back, want) {
		t.Fatalf("round trip\n got %v\nwant %v", back, want)
	}
}

// TestEventsFromAFileSource reads Debezium events as JSON lines through
// connector/file into a changelog, and a bad event fails the job with its
// file, line and field while the events before it were read.
func TestEventsFromAFileSource(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cdc.jsonl")
	good := bare + "\n" + wrapped + "\n" + `{"before":{"id":2,"email":"c@x"},"after":null,"op":"d","ts_ms":9}` + "\n"
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() ([]weir.Change[customer], error) {
		job := weir.NewJob("cdc")
		evs := weir.FromSource(job, "cdc", file.JSONLines[debezium.Event[customer]]([]string{path}), weir.NoWatermarks[debezium.Event[customer]]())
		out := weir.Collect(debezium.Changes(evs))
		err := job.Run(context.Background())
		return out.Items(), err
	}
	got, err := run()
	if err != nil {
		t.Fatal(err)
	}
	kinds := ""
	for _, c := range got {
		kinds += c.Kind.String()
	}
	if kinds != "-U+U+I-D" {
		t.Fatalf("changes %v", got)
	}
	bad := good + `{"before":null,"after":{"id":"x"},"op":"c"}` + "\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run()
	if err == nil || !strings.Contains(err.Error(), "cdc.jsonl:4") || !strings.Contains(err.Error(), `field "after"`) {
		t.Fatalf("error %v; want one naming cdc.jsonl:4 and the after field", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{bare, wrapped, "", "null", `{"schema":{},"payload":null}`, `{"op":"d","before":{"id":1}}`,
		`{"op":"u","after":{"id":1,"email":"\u00e9"}}`, `{"op":"t"}`, `{"payload":"x"}`, `[1,2]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := debezium.Decode[customer](data)
		if err != nil {
			var de *debezium.Error
			if !errors.As(err, &de) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		changes := e.Changes(nil)
		if e.Tombstone() != (len(changes) == 0) {
			t.Fatalf("%q: tombstone %v with %d changes", data, e.Tombstone(), len(changes))
		}
		// Whatever decodes re-encodes and decodes to the same changes.
		var enc debezium.Encoder[customer]
		var out []byte
		for _, c := range changes {
			if out, err = enc.Append(out, c, e.TsMs); err != nil {
				t.Fatal(err)
			}
		}
		out, _ = enc.Flush(out, e.TsMs)
		var back []weir.Change[customer]
		for _, l := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			e2, err := debezium.Decode[customer](l)
			if err != nil {
				t.Fatalf("re-encoded %q: %v", l, err)
			}
			back = e2.Changes(back)
		}
		if !slices.Equal(back, changes) {
			t.Fatalf("%q: round trip %v, want %v", data, back, changes)
		}
	})
}
