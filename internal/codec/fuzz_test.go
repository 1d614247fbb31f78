package codec

import (
	"bytes"
	"encoding/gob"
	"errors"
	"reflect"
	"testing"
	"time"
)

// The fuzz targets feed every decoder of the package arbitrary bytes,
// seeded with real encodings: each must return a value or an error, never
// panic, loop without end or allocate what a claimed length says. `go
// test` runs the seeds (and testdata/fuzz, the findings).

type fuzzEntry struct {
	Start, End int64
	Hash       uint64
	Key        string
	Acc        fuzzAcc
}

type fuzzAcc struct {
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

type flatEntry struct {
	Start, End int64
	Hash       uint64
	Key, Acc   int64
}

func groupOf[E any](es ...E) []byte {
	var g GroupWriter[E]
	g.Start(1)
	for i := range es {
		g.Add(0, &es[i])
	}
	groups, err := g.Finish()
	if err != nil {
		panic(err)
	}
	return groups[0]
}

// FuzzEachEntry decodes key groups of window entries: the group format
// (as the entry type, converted from another type, or flat) and gob.
func FuzzEachEntry(f *testing.F) {
	es := []fuzzEntry{{Start: -1, End: 1, Hash: 1<<64 - 1, Key: "k", Acc: fuzzAcc{Sum: 1.5, N: -3, Names: []string{"x", ""}, Tags: [2]uint8{1, 255}, OK: true, Raw: []byte{0, 1}, Small: -128, U: 65535, F: -0.25, Sub: []struct{ A, B int64 }{{1, -2}}}}, {}}
	f.Add(groupOf(es...))
	f.Add(groupOf(flatEntry{1, 2, 3, -4, 5}, flatEntry{}))
	type other struct {
		Key   string
		Count int64
		Arr   [3]uint16
	}
	f.Add(groupOf(other{"a", 1, [3]uint16{1, 2, 3}}))
	old, err := Marshal(es)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(old)
	f.Add([]byte{MagicGroup, Version, 5, '[', '9', '9', ']', 'b'})
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = EachEntry([][]byte{data}, func(fuzzEntry) {})
		_ = EachEntry([][]byte{data}, func(flatEntry) {})
		_ = EachEntry([][]byte{data}, func(e other) {})
	})
}

// FuzzStateFile decodes state files; what it accepts encodes to a file
// that decodes to the same state.
func FuzzStateFile(f *testing.F) {
	for _, st := range []StateFile{
		{UID: "w", Name: "window", Subtask: 1, Parallelism: 2, Watermark: -1 << 63, Groups: map[int][]byte{0: {MagicGroup}, 127: {}, 3: {1, 2, 3}}},
		{UID: "src", Meta: map[string][]byte{"a": {1}, "": nil}},
		{},
	} {
		f.Add(AppendStateFile(nil, &st))
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(st); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var st StateFile
		err := Unmarshal(data, &st)
		if err != nil || len(data) == 0 || data[0] != MagicStateFile {
			return
		}
		var back StateFile
		if err := Unmarshal(AppendStateFile(nil, &st), &back); err != nil || !reflect.DeepEqual(back, st) {
			t.Fatalf("decoded %+v, which encodes to %+v (%v)", st, back, err)
		}
	})
}

type valueFuzz struct {
	Name  string
	tags  []string
	m     map[string][]int
	p     *[2]int16
	When  time.Time
	B     []byte
	C     complex64
	Empty []struct{}
	Nest  [][]uint32
	F     float64
	OK    bool
}

type keyFuzz struct {
	S string
	I int32
	U uint64
	F float32
	B bool
	A [2]int8
}

// FuzzValueCodec decodes Key and Value encodings (the entries of keyed
// state); a value it decodes encodes back to the bytes it read (Key:
// canonical) or decodes again to an equal value (Value).
func FuzzValueCodec(f *testing.F) {
	vc, err := OfType[valueFuzz](Value)
	if err != nil {
		f.Fatal(err)
	}
	kc, err := OfType[keyFuzz](Key)
	if err != nil {
		f.Fatal(err)
	}
	v := valueFuzz{Name: "n", tags: []string{"a"}, m: map[string][]int{"k": {1}}, p: &[2]int16{-1, 1}, When: time.Date(2024, 5, 1, 2, 3, 4, 5, time.UTC), B: []byte{1}, C: 1i, Empty: make([]struct{}, 3), Nest: [][]uint32{{7}, nil}, F: -2, OK: true}
	f.Add(vc.Append(nil, &v))
	f.Add(vc.Append(nil, &valueFuzz{}))
	k := keyFuzz{"key", -5, 1 << 60, 0.5, true, [2]int8{-128, 127}}
	f.Add(kc.Append(nil, &k))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v valueFuzz
		if rest, err := vc.Read(data, &v); err == nil {
			var w valueFuzz
			enc := vc.Append(nil, &v)
			if _, err := vc.Read(enc, &w); err != nil {
				t.Fatalf("re-encoded value does not decode: %v", err)
			}
			if v.When.Equal(w.When) { // a decoded zone is a new *Location
				w.When = v.When
			}
			if !reflect.DeepEqual(v, w) && v.F == v.F && real(v.C) == real(v.C) && imag(v.C) == imag(v.C) { // NaN != NaN
				t.Fatalf("round trip: %+v, then %+v", v, w)
			}
			_ = rest
		} else if !errors.Is(err, ErrCorrupt) && !isUnmarshalError(err) {
			t.Fatalf("error %v", err)
		}
		var k keyFuzz
		if rest, err := kc.Read(data, &k); err == nil {
			if enc := kc.Append(nil, &k); !bytes.Equal(enc, data[:len(data)-len(rest)]) && k.F == k.F && k.F != 0 { // NaNs and -0 (read as written, encoded as +0) aside
				t.Fatalf("key %+v encodes as %x, read from %x", k, enc, data[:len(data)-len(rest)])
			}
		}
	})
}

func isUnmarshalError(err error) bool {
	return err != nil && bytes.Contains([]byte(err.Error()), []byte("UnmarshalBinary"))
}
