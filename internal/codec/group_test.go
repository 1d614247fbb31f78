package codec

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

// groupWithDesc is a key group whose entries claim the type description
// desc, followed by entries.
func groupWithDesc(desc string, entries ...byte) []byte {
	b := append([]byte{MagicGroup, Version}, binary.AppendUvarint(nil, uint64(len(desc)))...)
	return append(append(b, desc...), entries...)
}

// A description claiming a type larger than its entries could hold is
// refused before anything of that size is built: before the fold, a few
// bytes claiming [1000000000]i64 made the restore allocate 8 GB (or panic
// in reflect.ArrayOf for larger ones).
func TestEachEntryRefusesHugeDescriptions(t *testing.T) {
	for _, desc := range []string{
		"{A:[1000000000]i64}",
		"[99999999999999999]u8",
		"{A:[1000][1000][1000]i64}",
		strings.Repeat("[]", 10000) + "b",
		"{A:" + strings.Repeat("[2]", 100) + "b}",
		"{a:b}",     // not an exported field: StructOf refuses
		"{A:b,A:b}", // a duplicate field
	} {
		err := EachEntry([][]byte{groupWithDesc(desc, 1, 2, 3)}, func(flatEntry) {})
		if err == nil || !strings.Contains(err.Error(), "type description") {
			t.Errorf("%.40s: %v", desc, err)
		}
	}
}

// Entries that the Compact flavour cannot hold go to gob; the writer keeps
// them until Finish, so the caller must not reuse their slices.
func TestGroupWriterGobFallback(t *testing.T) {
	type withMap struct {
		M    map[string]int
		Wins []int64
	}
	var g GroupWriter[withMap]
	g.Start(4)
	if !g.Keeps() || g.Binary() {
		t.Fatal("a map entry should take gob")
	}
	want := []withMap{{M: map[string]int{"a": 1}, Wins: []int64{1, 2}}, {Wins: []int64{3}}}
	for i := range want {
		g.Add(2, &want[i])
	}
	groups, err := g.Finish()
	if err != nil || len(groups) != 1 {
		t.Fatal(groups, err)
	}
	var got []withMap
	if err := EachEntry([][]byte{groups[2]}, func(e withMap) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
	var flat GroupWriter[flatEntry]
	flat.Start(4)
	if flat.Keeps() || !flat.Binary() {
		t.Fatal("a plain entry should take the group format")
	}
}

// A state file claiming more key groups than its bytes can hold fails
// before the map is made.
func TestStateFileRefusesHugeCounts(t *testing.T) {
	data := AppendStateFile(nil, &StateFile{UID: "u", Groups: map[int][]byte{1: {2}}})
	// The groups count follows magic, version, uid, name, subtask,
	// parallelism and watermark.
	i := 2 + 2 + 1 + 3
	data = append(append(data[:i:i], binary.AppendUvarint(nil, 1<<40)...), data[i+1:]...)
	var st StateFile
	if err := DecodeStateFile(data, &st); err == nil || !strings.Contains(err.Error(), "key groups") {
		t.Fatalf("got %v", err)
	}
}
