package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// endless yields n bytes of c, without a newline, without holding them.
type endless struct {
	c byte
	n int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), e.n))
	for i := range k {
		p[i] = e.c
	}
	e.n -= int64(k)
	return k, nil
}

// A line longer than MaxRecordBytes is an error naming its line and the
// option; the lines before it are returned; with SkipBadRecords the lines
// after it are read.
func TestJSONLinesLineLimit(t *testing.T) {
	in := "1\n2\n\"" + strings.Repeat("x", 3000) + "\"\n3\n"
	path := writeFile(t, t.TempDir(), "long.jsonl", in)
	src := JSONLines[int]([]string{path}, MaxRecordBytes(1000))
	splits, _ := src.Splits(context.Background())
	r, err := src.Open(context.Background(), splits[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dst := make([]int, 10)
	var got []int
	for {
		n, err := r.Read(context.Background(), dst)
		got = append(got, dst[:n]...)
		if err == nil {
			continue
		}
		var re *RecordError
		if !errors.As(err, &re) || !errors.Is(err, ErrTooLong) || re.Line != 3 || re.Offset != 4 {
			t.Fatalf("got %v", err)
		}
		if !strings.Contains(err.Error(), "MaxRecordBytes") || !strings.Contains(err.Error(), ":3 ") {
			t.Errorf("%q does not say the line and the option", err)
		}
		break
	}
	if !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("before the long line: %v", got)
	}

	src = JSONLines[int]([]string{path}, MaxRecordBytes(1000), SkipBadRecords())
	r, err = src.Open(context.Background(), splits[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got = got[:0]
	for {
		n, err := r.Read(context.Background(), dst)
		got = append(got, dst[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, []int{1, 2, 3}) || r.(*Reader[int]).Skipped() != 1 {
		t.Fatalf("skipping: %v, %d skipped", got, r.(*Reader[int]).Skipped())
	}
	if src := JSONLines[int]([]string{path}, MaxRecordBytes(0)); src != nil {
		if _, err := src.Splits(context.Background()); err == nil {
			t.Error("MaxRecordBytes(0) accepted")
		}
	}
}

// A 64 MiB line without a newline costs about the limit in memory, not
// the line's size.
func TestLongLineMemoryBounded(t *testing.T) {
	const size, limit = 64 << 20, 1 << 20
	for _, follow := range []bool{false, true} {
		cfg := config{bufSize: readBufferSize, maxRecord: limit, follow: follow}
		r := newReader[json.RawMessage]("mem", &endless{c: '7', n: size}, cfg, formatJSON, nil)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		dst := make([]json.RawMessage, 4)
		var err error
		for i := 0; i < 10_000; i++ {
			if _, err = r.Read(context.Background(), dst); err != nil {
				break
			}
		}
		runtime.ReadMemStats(&after)
		if follow {
			if err != nil {
				t.Fatalf("follow: %v", err)
			}
			if r.lines.consumed() != size {
				t.Fatalf("follow: consumed %d of %d", r.lines.consumed(), size)
			}
		} else if !errors.Is(err, ErrTooLong) {
			t.Fatalf("got %v", err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*limit {
			t.Errorf("follow=%v: allocated %d bytes reading a %d-byte line with a %d-byte limit", follow, alloc, size, limit)
		}
	}
}

// A CSV record whose quoted field spans lines counts as one record
// against the limit; the records after it are read.
func TestCSVRecordLimit(t *testing.T) {
	long := "\"" + strings.Repeat("line\n", 100) + "\""
	in := "a,1\n" + long + ",2\nb,3\n"
	clone := func(f []string) ([]string, error) { return slices.Clone(f), nil }
	r := newReader("csv", bytes.NewReader([]byte(in)), config{bufSize: 64, maxRecord: 100, skipBad: true}, formatCSV, clone)
	var got [][]string
	dst := make([][]string, 4)
	for {
		n, err := r.Read(context.Background(), dst)
		got = append(got, dst[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0][0] != "a" || got[1][0] != "b" || r.Skipped() != 1 {
		t.Fatalf("got %q, %d skipped", got, r.Skipped())
	}
	if r.Offset() != int64(len(in)) {
		t.Fatalf("offset %d, want %d", r.Offset(), len(in))
	}
	// The same record within a larger limit is read.
	r = newReader("csv", bytes.NewReader([]byte(in)), config{bufSize: 64, maxRecord: 1000}, formatCSV, clone)
	n, err := r.Read(context.Background(), dst)
	if (err != nil && err != io.EOF) || n != 3 || !strings.HasPrefix(dst[1][0], "line\nline") {
		t.Fatalf("%d records, %v", n, err)
	}
}
