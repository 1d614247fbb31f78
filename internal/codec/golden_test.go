package codec

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The files testdata/*_v1.hex were written by the codec before it moved
// here (snapshot_codec.go and gob in package weir, as of the commit that
// introduced the binary formats, main at fd6d661): snapshots and state files that jobs have
// written must keep restoring, and the binary ones must encode to the same
// bytes (a change of format needs a new Version and a reader for this one).

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	h, err := os.ReadFile(filepath.Join("testdata", name+"_v1.hex"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(h)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goldenAccEntries are the entries of group_acc and group_gob (weir's
// alignedEntry[string, codecAcc], whose fields fuzzEntry has).
func goldenAccEntries() []fuzzEntry {
	return []fuzzEntry{
		{Start: -1000, End: 0, Hash: 1<<64 - 1, Key: "a", Acc: fuzzAcc{Sum: 1.5, N: -3, Names: []string{"x", "", "zz"}, Tags: [2]uint8{1, 255}, OK: true, Raw: []byte{0, 1, 2}, Small: -128, U: 65535, F: -0.25,
			Sub: []struct{ A, B int64 }{{1, -2}, {-1 << 63, 1<<63 - 1}}}},
		{Start: 0, End: 1000, Hash: 42, Key: "", Acc: fuzzAcc{}},
	}
}

func TestGoldenV1(t *testing.T) {
	entries := func(data []byte) []fuzzEntry {
		var got []fuzzEntry
		if err := EachEntry([][]byte{data}, func(e fuzzEntry) { got = append(got, e) }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	acc := readGolden(t, "group_acc")
	if got := entries(acc); !reflect.DeepEqual(got, goldenAccEntries()) {
		t.Fatalf("group_acc: %+v", got)
	}
	if again := groupOf(goldenAccEntries()...); !bytes.Equal(again, acc) {
		t.Fatalf("group_acc encodes as %x, was %x", again, acc)
	}
	if got := entries(readGolden(t, "group_gob")); !reflect.DeepEqual(got, goldenAccEntries()) {
		t.Fatalf("group_gob: %+v", got)
	}

	flat := readGolden(t, "group_flat")
	want := []flatEntry{{0, 10, 7, -5, 1 << 40}, {-1 << 63, 1<<63 - 1, 0, 0, -1}}
	var got []flatEntry
	if err := EachEntry([][]byte{flat}, func(e flatEntry) { got = append(got, e) }); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("group_flat: %+v, %v", got, err)
	}
	if again := groupOf(want...); !bytes.Equal(again, flat) {
		t.Fatalf("group_flat encodes as %x, was %x", again, flat)
	}

	sf := readGolden(t, "statefile")
	wantSt := StateFile{UID: "w", Name: "window", Subtask: 1, Parallelism: 2, Watermark: -7, Groups: map[int][]byte{3: {1, 2}, 5: {}}, Meta: map[string][]byte{"m": {9}}}
	var st StateFile
	if err := Unmarshal(sf, &st); err != nil || !reflect.DeepEqual(st, wantSt) {
		t.Fatalf("statefile: %+v, %v", st, err)
	}
	if again, _ := Marshal(wantSt); !bytes.Equal(again, sf) {
		t.Fatalf("statefile encodes as %x, was %x", again, sf)
	}
}
