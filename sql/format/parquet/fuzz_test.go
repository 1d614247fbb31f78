package parquet

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/types"
)

// FuzzRead reads arbitrary bytes as a Parquet file of allTypes: errors,
// never a panic or a hang.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, allTypes, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}, nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range allRows() {
		w.Write(r)
	}
	w.Finish()
	f.Add(buf.Bytes())
	f.Add([]byte("PAR1PAR1"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "f.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := OpenFile(path, nil, allTypes, targets(len(allTypes)), nil)
		if err != nil {
			return
		}
		defer r.Close()
		dst := make([]types.Row, 4)
		for range 1000 {
			if _, err := r.Read(context.Background(), dst); err != nil {
				return
			}
		}
	})
}

// Damaged files (bytes of a valid one changed at random: parquet-go
// panics on some) fail with an error naming the file, never a panic.
func TestDamagedFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.parquet")
	writeFile(t, path, allTypes, allRows(), nil)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(40, 4))
	failed := 0
	for range 1000 {
		data := append([]byte(nil), orig...)
		for range 1 + rng.IntN(4) {
			data[rng.IntN(len(data))] = byte(rng.IntN(256))
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := OpenFile(path, nil, allTypes, targets(len(allTypes)), nil)
		if err == nil {
			for err == nil {
				_, err = r.Read(context.Background(), make([]types.Row, 2))
			}
			r.Close()
			if err == io.EOF {
				continue // the damage was in values: read as other values
			}
		}
		failed++
		if !strings.Contains(err.Error(), "parquet file "+path) {
			t.Fatalf("error %q does not name the file", err)
		}
	}
	if failed < 100 {
		t.Fatalf("only %d of 1000 damaged files failed", failed)
	}
}
