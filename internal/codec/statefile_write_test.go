package codec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// WriteStateFile streams exactly the bytes AppendStateFile builds (which is
// WriteStateFile into memory: the format itself is pinned by the golden
// files), for groups and meta values small (copied into the header) and
// large (written as they are), and DecodeStateFile reads every value back.
func TestWriteStateFileMatchesAppend(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	blob := func() []byte {
		n := r.IntN(3)
		size := [...]int{0, 100, 10000}[n] + r.IntN(50)
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	for i := range 200 {
		st := &StateFile{UID: "op-uid", Name: "window", Subtask: i % 3, Parallelism: 3, Watermark: int64(i*1000 - 5)}
		if i%4 != 0 {
			st.Groups = map[int][]byte{}
			for range r.IntN(6) {
				st.Groups[r.IntN(128)] = blob()
			}
		}
		if i%3 != 0 {
			st.Meta = map[string][]byte{}
			for range r.IntN(4) {
				st.Meta[string(rune('a'+r.IntN(26)))] = blob()
			}
		}
		want := AppendStateFile(nil, st)
		var buf bytes.Buffer
		if err := WriteStateFile(&buf, st); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("case %d: WriteStateFile wrote %d bytes, AppendStateFile %d, contents differ", i, buf.Len(), len(want))
		}
		var back StateFile
		if err := DecodeStateFile(buf.Bytes(), &back); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if back.Watermark != st.Watermark || len(back.Groups) != len(st.Groups) || len(back.Meta) != len(st.Meta) {
			t.Fatalf("case %d: decoded %+v", i, back)
		}
		for kg, v := range st.Groups {
			if !bytes.Equal(back.Groups[kg], v) {
				t.Fatalf("case %d: key group %d decoded as %d bytes, want %d", i, kg, len(back.Groups[kg]), len(v))
			}
		}
		for k, v := range st.Meta {
			if !bytes.Equal(back.Meta[k], v) {
				t.Fatalf("case %d: meta %q decoded as %d bytes, want %d", i, k, len(back.Meta[k]), len(v))
			}
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(b), nil
}

// A write error is returned, not dropped.
func TestWriteStateFileError(t *testing.T) {
	st := &StateFile{UID: "u", Groups: map[int][]byte{1: make([]byte, 8192), 2: make([]byte, 8192)}}
	count := &failWriter{n: 1 << 30}
	if err := WriteStateFile(count, st); err != nil {
		t.Fatal(err)
	}
	writes := 1<<30 - count.n
	if writes < 3 {
		t.Fatalf("%d writes: the large groups were not streamed", writes)
	}
	for n := range writes {
		if err := WriteStateFile(&failWriter{n: n}, st); err == nil {
			t.Fatalf("write %d of %d failed: no error", n+1, writes)
		}
	}
}
