package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden files in testdata/")

func goldenMetadata() *Metadata {
	return &Metadata{
		FormatVersion:  1,
		ID:             41,
		Kind:           KindCheckpoint,
		Job:            "adclicks",
		Created:        time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC),
		JobOptions:     map[string]string{"parallelism": "2", "checkpoint.interval": "10s"},
		MaxParallelism: 128,
		Operators: []OperatorState{
			{UID: "source", Name: "Kafka", Parallelism: 1, Files: []FileInfo{},
				Extra: map[string]json.RawMessage{"offsets": json.RawMessage(`{"clicks-0":1234}`), "watermark": json.RawMessage(`1767323045000`)}},
			{UID: "window-3", Name: "Window", Parallelism: 2, Files: []FileInfo{
				{Name: "window-3.0", Size: 5120, CRC32C: 0x1a2b3c4d, Subtask: 0, KeyGroups: &KeyGroupRange{0, 64}},
				{Name: "window-3.1", Size: 0, CRC32C: 0, Subtask: 1, KeyGroups: &KeyGroupRange{64, 128}},
			}},
			{UID: "sink", Name: "Sink", Parallelism: 2, Files: []FileInfo{
				{Name: "sink.0", Size: 17, CRC32C: 0xdeadbeef, Subtask: 1},
			}},
		},
	}
}

// TestMetadataGolden pins the version 1 format: a change to the golden file
// is a change to what older and newer builds read.
func TestMetadataGolden(t *testing.T) {
	path := filepath.Join("testdata", "metadata_v1.golden")
	got, err := encodeMetadata(goldenMetadata())
	if err != nil {
		t.Fatal(err)
	}
	if *rewrite {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from %s (run with -rewrite if intended):\n%s", path, got)
	}
	m, err := decodeMetadata(path, want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, goldenMetadata()) {
		t.Fatalf("decoded:\n%+v\nwant\n%+v", m, goldenMetadata())
	}
	if m.HasShared() || m.WrittenSize() != m.TotalSize() {
		t.Fatalf("version 1: shared %t, written %d of %d", m.HasShared(), m.WrittenSize(), m.TotalSize())
	}
}

// goldenMetadataV2 is an incremental checkpoint: shared files, one of
// them uploaded by an earlier checkpoint.
func goldenMetadataV2() *Metadata {
	m := goldenMetadata()
	m.FormatVersion = 2
	m.Operators = append(m.Operators, OperatorState{UID: "process", Name: "Process", Parallelism: 1, Files: []FileInfo{
		{Name: "op003-process-0.state", Size: 300, CRC32C: 0x01020304, Subtask: 0, KeyGroups: &KeyGroupRange{0, 128}},
		{Name: "op003-process-0.db.MANIFEST-000001", Size: 200, CRC32C: 0x05060708, Subtask: 0, KeyGroups: &KeyGroupRange{0, 128}},
		{Name: "process/5f3a9c/000007.sst", Size: 1 << 20, CRC32C: 0x0a0b0c0d, Subtask: 0, KeyGroups: &KeyGroupRange{0, 128}, Shared: true, UploadedIn: 40},
		{Name: "process/5f3a9c/000012.sst", Size: 4096, CRC32C: 0x0e0f1011, Subtask: 0, KeyGroups: &KeyGroupRange{0, 128}, Shared: true, UploadedIn: 41},
	}})
	return m
}

// TestMetadataGoldenV2 pins the version 2 format (shared files).
func TestMetadataGoldenV2(t *testing.T) {
	path := filepath.Join("testdata", "metadata_v2.golden")
	got, err := encodeMetadata(goldenMetadataV2())
	if err != nil {
		t.Fatal(err)
	}
	if *rewrite {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from %s (run with -rewrite if intended):\n%s", path, got)
	}
	m, err := decodeMetadata(path, want)
	if err != nil {
		t.Fatal(err)
	}
	if !m.HasShared() || m.SharedSize() != 1<<20+4096 || m.WrittenSize() != m.TotalSize()-1<<20 {
		t.Fatalf("sizes: shared %d written %d total %d", m.SharedSize(), m.WrittenSize(), m.TotalSize())
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"shared in version 1", `"format_version": 2`, `"format_version": 1`, "need version 2"},
		{"shared in a savepoint", `"kind": "checkpoint"`, `"kind": "savepoint"`, "self-contained"},
		{"shared path escapes", `process/5f3a9c/000007.sst`, `process/../000007.sst`, "must not start with"},
		{"uploaded later", `"uploaded_in": 40`, `"uploaded_in": 42`, "not in [1, 41]"},
	} {
		body := strings.Replace(string(want[:len(want)-trailerLen]), tc.from, tc.to, 1)
		if _, err := decodeMetadata("m", sealBody(body)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a corrupt error mentioning %q", tc.name, err, tc.want)
		}
	}
	if !reflect.DeepEqual(m, goldenMetadataV2()) {
		t.Fatalf("decoded:\n%+v\nwant\n%+v", m, goldenMetadataV2())
	}
}

func TestDecodeMetadataErrors(t *testing.T) {
	valid, err := encodeMetadata(goldenMetadata())
	if err != nil {
		t.Fatal(err)
	}
	withBody := func(body string) []byte {
		body += "\n"
		return []byte(body + "crc32c " + checksumOf([]byte(body)).String() + "\n")
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "no crc32c checksum line"},
		{"no trailer", valid[:len(valid)-trailerLen], "no crc32c checksum line"},
		{"trailer not on its own line", bytes.Replace(valid, []byte("}\ncrc32c"), []byte("} crc32c"), 1), "no crc32c checksum line"},
		{"bad hex", append(valid[:len(valid)-3:len(valid)-3], "zz\n"...), "encoding/hex"},
		{"flipped bit", bytes.Replace(valid, []byte("adclicks"), []byte("adclickS"), 1), "checksum mismatch"},
		{"too big", append(bytes.Repeat([]byte(" "), maxMetadataSize), valid...), "more than"},
		{"not an object", withBody("[1, 2]"), "does not parse"},
		{"no version", withBody(`{"checkpoint_id": 1}`), "no format_version"},
		{"version 0", withBody(`{"format_version": 0}`), "format version 0"},
		{"wrong types", withBody(`{"format_version": 1, "checkpoint_id": "one"}`), "does not parse"},
		{"bad checksum text", withBody(`{"format_version": 1, "checkpoint_id": 1, "kind": "checkpoint", "max_parallelism": 1,
			"operators": [{"uid": "a", "parallelism": 1, "files": [{"name": "f", "crc32c": "xyz"}]}]}`), "checksum \"xyz\""},
		{"path in a name", withBody(`{"format_version": 1, "checkpoint_id": 1, "kind": "checkpoint", "max_parallelism": 1,
			"operators": [{"uid": "a", "parallelism": 1, "files": [{"name": "a/../../etc/passwd", "crc32c": "00000000"}]}]}`), "only letters"},
		{"bad kind", withBody(`{"format_version": 1, "checkpoint_id": 1, "kind": "backup", "max_parallelism": 1}`), "kind \"backup\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeMetadata("m", tc.data)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a corrupt error mentioning %q", err, tc.want)
			}
		})
	}
	_, err = decodeMetadata("m", withBody(`{"format_version": 3, "something": "else"}`))
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Version != 3 || ve.Path != "m" || !errors.Is(err, ErrUnsupportedVersion) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("newer version: %v", err)
	}
}

// FuzzDecodeMetadata checks that the decoder never panics, and that what
// it accepts encodes again to something it reads back the same. Each input
// is decoded as is, and as a body sealed with its correct checksum line, so
// that the fuzzer gets past the checksum to the JSON and its validation.
func FuzzDecodeMetadata(f *testing.F) {
	valid, err := encodeMetadata(goldenMetadata())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-trailerLen]) // sealed, it is valid
	f.Add(valid[:len(valid)/2])
	f.Add([]byte{})
	f.Add([]byte("{}\ncrc32c 00000000\n"))
	f.Add([]byte(`{"format_version": 2}`))
	empty, _ := encodeMetadata(&Metadata{FormatVersion: 1, ID: 1, Kind: KindSavepoint, MaxParallelism: 1})
	f.Add(empty[:len(empty)-trailerLen])
	f.Fuzz(func(t *testing.T, data []byte) {
		body := bytes.TrimSuffix(data, []byte("\n"))
		body = append(body[:len(body):len(body)], '\n')
		sealed := append(body, "crc32c "+checksumOf(body).String()+"\n"...)
		for _, in := range [][]byte{data, sealed} {
			m, err := decodeMetadata("fuzz", in)
			if err != nil {
				if !IsUnusable(err) {
					t.Fatalf("error of an unexpected kind: %v", err)
				}
				continue
			}
			enc, err := encodeMetadata(m)
			if err != nil {
				t.Fatalf("decoded metadata does not encode: %v", err)
			}
			m2, err := decodeMetadata("fuzz", enc)
			if err != nil {
				t.Fatalf("re-encoded metadata does not decode: %v\n%s", err, enc)
			}
			if enc2, _ := encodeMetadata(m2); !bytes.Equal(enc, enc2) {
				t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
			}
		}
	})
}

// sealBody appends the checksum line to a metadata body (which ends with
// its newline).
func sealBody(body string) []byte {
	return []byte(body + "crc32c " + checksumOf([]byte(body)).String() + "\n")
}
