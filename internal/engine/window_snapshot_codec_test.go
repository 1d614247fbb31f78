package engine

import (
	"bytes"
	"encoding/gob"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/codec"
)

// codecFor is the Compact codec of E, or nil when E needs gob.
func codecFor[E any]() *codec.Codec {
	c, _ := codec.For(reflect.TypeFor[E](), codec.Compact)
	return c
}

type codecAcc struct {
	Sum   float64
	N     int32
	Names []string
	Tags  [2]uint8
	OK    bool
	Raw   []byte
	Small int8
	U     uint16
	F     float32
	Sub   []struct{ A, B int64 }
}

func sampleAccEntries() []alignedEntry[string, codecAcc] {
	return []alignedEntry[string, codecAcc]{
		{Start: -1000, End: 0, Hash: 1<<64 - 1, Key: "a", Acc: codecAcc{Sum: 1.5, N: -3, Names: []string{"x", "", "zz"}, Tags: [2]uint8{1, 255}, OK: true, Raw: []byte{0, 1, 2}, Small: -128, U: 65535, F: -0.25,
			Sub: []struct{ A, B int64 }{{1, -2}, {-1 << 63, 1<<63 - 1}}}},
		{Start: 0, End: 1000, Hash: 42, Key: "", Acc: codecAcc{}},
	}
}

// encodeBinaryGroup is one key group as groupWriter writes it.
func encodeBinaryGroup[E any](t testing.TB, es []E) []byte {
	t.Helper()
	c := codecFor[E]()
	if c == nil {
		t.Fatalf("no binary codec for %T", es)
	}
	var g codec.GroupWriter[E]
	g.Start(1)
	for i := range es {
		g.Add(0, &es[i])
	}
	groups, err := g.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return groups[0]
}

func decodeGroups[E any](t testing.TB, groups ...[]byte) []E {
	t.Helper()
	var got []E
	if err := codec.EachEntry(groups, func(e E) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestSnapshotCodecRoundTrip(t *testing.T) {
	want := sampleAccEntries()
	data := encodeBinaryGroup(t, want)
	if data[0] != codec.MagicGroup {
		t.Fatalf("first byte %#x", data[0])
	}
	got := decodeGroups[alignedEntry[string, codecAcc]](t, data)
	// gob gives nil for empty slices, so does the codec.
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	ints := []alignedEntry[int64, int64]{{0, 10, 7, -5, 1 << 40}, {-1 << 63, 1<<63 - 1, 0, 0, -1}}
	if !codecFor[alignedEntry[int64, int64]]().Flat() {
		t.Fatal("int64 entries should take the flat path")
	}
	if got := decodeGroups[alignedEntry[int64, int64]](t, encodeBinaryGroup(t, ints)); !slices.Equal(got, ints) {
		t.Fatalf("got %v want %v", got, ints)
	}
}

// Snapshots written before the binary codec (gob) restore, mixed with new
// ones (a rescale can read both in one restore only across versions, but
// eachEntry must not care).
func TestSnapshotCodecReadsGob(t *testing.T) {
	want := sampleAccEntries()
	old, err := encode(want)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeGroups[alignedEntry[string, codecAcc]](t, old, encodeBinaryGroup(t, want))
	if !reflect.DeepEqual(got, append(slices.Clone(want), want...)) {
		t.Fatalf("got %+v", got)
	}

	// A state file written with gob (opState before the codec).
	st := opState{UID: "w", Name: "window", Subtask: 1, Parallelism: 2, Watermark: -7, Groups: map[int][]byte{3: old, 5: {1, 2}}, Meta: map[string][]byte{"m": {9}}}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		t.Fatal(err)
	}
	var back opState
	if err := decode(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Fatalf("gob state file: got %+v", back)
	}
}

func TestSnapshotCodecStateFile(t *testing.T) {
	for _, st := range []opState{
		{UID: "w", Name: "window", Subtask: 1, Parallelism: 2, Watermark: -1 << 63, Groups: map[int][]byte{0: {codec.MagicGroup}, 127: {}, 3: {1, 2, 3}}},
		{UID: "src", Meta: map[string][]byte{"a": {1}, "": nil}},
		{},
	} {
		data, err := encode(st)
		if err != nil {
			t.Fatal(err)
		}
		if data[0] != codec.MagicStateFile {
			t.Fatalf("first byte %#x", data[0])
		}
		var got opState
		if err := decode(data, &got); err != nil {
			t.Fatal(err)
		}
		// A nil value comes back empty; compare by content.
		if got.UID != st.UID || got.Name != st.Name || got.Subtask != st.Subtask || got.Parallelism != st.Parallelism ||
			got.Watermark != st.Watermark || (got.Groups == nil) != (st.Groups == nil) || (got.Meta == nil) != (st.Meta == nil) ||
			len(got.Groups) != len(st.Groups) || len(got.Meta) != len(st.Meta) {
			t.Fatalf("got %+v want %+v", got, st)
		}
		for k, v := range st.Groups {
			if !bytes.Equal(got.Groups[k], v) {
				t.Fatalf("group %d: %v", k, got.Groups[k])
			}
		}
		for k, v := range st.Meta {
			if !bytes.Equal(got.Meta[k], v) {
				t.Fatalf("meta %q: %v", k, got.Meta[k])
			}
		}
		// Every truncation is an error, not a panic or a silent loss.
		for i := range len(data) {
			if decode(data[:i], &got) == nil {
				t.Fatalf("truncated to %d bytes: no error", i)
			}
		}
	}
}

func TestSnapshotCodecCorruptAndVersion(t *testing.T) {
	data := encodeBinaryGroup(t, sampleAccEntries())
	for i := 2; i < len(data); i++ {
		_ = codec.EachEntry([][]byte{data[:i]}, func(alignedEntry[string, codecAcc]) {}) // must not panic
	}
	if err := codec.EachEntry([][]byte{data[:len(data)-1]}, func(alignedEntry[string, codecAcc]) {}); err == nil {
		t.Fatal("truncated group: no error")
	}
	newer := slices.Clone(data)
	newer[1] = codec.Version + 1
	err := codec.EachEntry([][]byte{newer}, func(alignedEntry[string, codecAcc]) {})
	if err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("newer version: %v", err)
	}
	st, _ := encode(opState{UID: "x"})
	st[1] = codec.Version + 1
	var got opState
	if err := decode(st, &got); err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("newer state file: %v", err)
	}
}

// A state type that changed since the snapshot restores as gob would
// restore it: fields matched by name, new ones zero, removed ones dropped.
func TestSnapshotCodecTypeChange(t *testing.T) {
	type accV1 struct {
		Count int64
		Label string
		Gone  []int32
	}
	type accV2 struct {
		Label string
		Count int32 // narrower: gob converts in range
		New   float64
	}
	data := encodeBinaryGroup(t, []alignedEntry[int64, accV1]{{Start: 1, End: 2, Hash: 3, Key: 4, Acc: accV1{Count: 5, Label: "l", Gone: []int32{1}}}})
	got := decodeGroups[alignedEntry[int64, accV2]](t, data)
	want := []alignedEntry[int64, accV2]{{Start: 1, End: 2, Hash: 3, Key: 4, Acc: accV2{Label: "l", Count: 5}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
	// An incompatible change fails with gob's reason.
	err := codec.EachEntry([][]byte{data}, func(alignedEntry[int64, string]) {})
	if err == nil {
		t.Fatal("incompatible type: no error")
	}
}

func TestSnapshotCodecFallsBackToGob(t *testing.T) {
	type unexported struct{ a int }
	type withMap struct{ M map[string]int }
	type withPtr struct{ P *int }
	type rec struct{ Kids []rec }
	for name, ok := range map[string]bool{
		"time.Time":  codecFor[alignedEntry[int64, time.Time]]() != nil,
		"unexported": codecFor[alignedEntry[int64, unexported]]() != nil,
		"map":        codecFor[alignedEntry[int64, withMap]]() != nil,
		"pointer":    codecFor[alignedEntry[int64, withPtr]]() != nil,
		"recursive":  codecFor[alignedEntry[int64, rec]]() != nil,
		"empty":      codecFor[alignedEntry[int64, struct{}]]() != nil,
		"any":        codecFor[alignedEntry[int64, any]]() != nil,
	} {
		if ok {
			t.Errorf("%s: binary codec, want gob", name)
		}
	}
	if codecFor[genEntry[string, int64, int64]]() == nil || codecFor[overEntry[int64, codecAcc]]() == nil {
		t.Error("plain entries should have a binary codec")
	}
	// Gob's error for a type it cannot encode is kept.
	if _, err := encode([]alignedEntry[int64, unexported]{{}}); err == nil || !errors.Is(err, err) {
		t.Fatal("want gob's error")
	}
}

// BenchmarkWindowSnapshot compares encoding 1M aligned-window entries
// (int64 key and count, 128 key groups) with gob, as before the binary
// codec, and with groupWriter.
func BenchmarkWindowSnapshot(b *testing.B) {
	const n = 1 << 20
	es := make([]alignedEntry[int64, int64], n)
	for i := range es {
		es[i] = alignedEntry[int64, int64]{Start: 1436918400000, End: 1436918410000, Hash: uint64(i) * 0x9E3779B97F4A7C15, Key: int64(1000 + i), Acc: int64(i % 50)}
	}
	b.Run("gob", func(b *testing.B) {
		for b.Loop() {
			groups := map[int][]alignedEntry[int64, int64]{}
			for _, e := range es {
				kg := int(e.Hash % 128)
				groups[kg] = append(groups[kg], e)
			}
			for _, es := range groups {
				if _, err := encode(es); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("binary", func(b *testing.B) {
		var g codec.GroupWriter[alignedEntry[int64, int64]]
		for b.Loop() {
			g.Start(128)
			for i := range es {
				g.Add(int(es[i].Hash%128), &es[i])
			}
			_, _ = g.Finish()
		}
	})
}

// BenchmarkWindowSnapshotCodec encodes and decodes window entries with the
// binary codec: 1M flat entries (int64 key and count: the flat loop) and
// 100k general ones (string key, a struct accumulator with strings and
// slices: the per-type plan), each in 128 key groups.
func BenchmarkWindowSnapshotCodec(b *testing.B) {
	flat := make([]alignedEntry[int64, int64], 1<<20)
	for i := range flat {
		flat[i] = alignedEntry[int64, int64]{Start: 1436918400000, End: 1436918410000, Hash: uint64(i) * 0x9E3779B97F4A7C15, Key: int64(1000 + i), Acc: int64(i % 50)}
	}
	general := make([]alignedEntry[string, codecAcc], 100_000)
	for i := range general {
		general[i] = alignedEntry[string, codecAcc]{Start: 1436918400000, End: 1436918410000, Hash: uint64(i) * 0x9E3779B97F4A7C15, Key: "user-" + string(rune('a'+i%26)),
			Acc: codecAcc{Sum: float64(i), N: int32(i), Names: []string{"x", "yy"}, Tags: [2]uint8{1, 2}, OK: i%2 == 0, Raw: []byte{1, 2, 3}, Small: -1, U: 7, F: 0.5, Sub: []struct{ A, B int64 }{{int64(i), -int64(i)}}}}
	}
	benchWindowCodec(b, "flat", flat)
	benchWindowCodec(b, "general", general)
}

func benchWindowCodec[K comparable, ACC any](b *testing.B, name string, es []alignedEntry[K, ACC]) {
	var g codec.GroupWriter[alignedEntry[K, ACC]]
	encodeAll := func() map[int][]byte {
		g.Start(128)
		for i := range es {
			g.Add(int(es[i].Hash%128), &es[i])
		}
		groups, _ := g.Finish()
		return groups
	}
	b.Run(name+"/encode", func(b *testing.B) {
		size := 0
		for b.Loop() {
			size = 0
			for _, data := range encodeAll() {
				size += len(data)
			}
		}
		b.ReportMetric(float64(size), "bytes")
	})
	var groups [][]byte
	for _, data := range encodeAll() {
		groups = append(groups, data)
	}
	b.Run(name+"/decode", func(b *testing.B) {
		for b.Loop() {
			n := 0
			if err := codec.EachEntry(groups, func(alignedEntry[K, ACC]) { n++ }); err != nil || n != len(es) {
				b.Fatal(n, err)
			}
		}
	})
}

// The barrier loops of the window operators reuse one entry's slices from
// key to key when the entries are encoded at once (binary), and must not
// when gob keeps them until Finish: each restored entry has its own
// windows either way. (The first key has more windows than the second, so
// that reusing the slice under gob would overwrite the first entry's.)
func TestSnapshotEntryReuse(t *testing.T) {
	type mapOut struct{ M map[string]int }
	if !reuseRoundTrip[int64](t) {
		t.Error("binary entries: want the group format")
	}
	if reuseRoundTrip[mapOut](t) {
		t.Error("entries with a map: want gob")
	}
}

func reuseRoundTrip[OUT any](t *testing.T) (binary bool) {
	t.Helper()
	want := [][]genWinEntry[int64, OUT]{{{Start: 0, End: 10, Count: 1}, {Start: 10, End: 20, Count: 2}}, {{Start: 20, End: 30, Count: 3}}}
	var g codec.GroupWriter[genEntry[int64, int64, OUT]]
	g.Start(1)
	var e genEntry[int64, int64, OUT]
	for k, wins := range want {
		e.Key, e.Hash, e.Wins = int64(k), uint64(k), reuse(&g, e.Wins)
		e.Wins = append(e.Wins, wins...)
		g.Add(0, &e)
	}
	groups, err := g.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]genWinEntry[int64, OUT]
	if err := codec.EachEntry([][]byte{groups[0]}, func(e genEntry[int64, int64, OUT]) { got = append(got, e.Wins) }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%T: got %+v, want %+v", e, got, want)
	}
	return g.Binary()
}
