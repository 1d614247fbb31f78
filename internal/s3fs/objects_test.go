package s3fs_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/internal/s3fs"
	"github.com/weirstream/weir/internal/testing/s3test"
)

// A staged upload of several parts is invisible until completed, reads
// back whole (by ranges too), and completing it twice says it is gone.
func TestStagedUpload(t *testing.T) {
	s3test.Start(t, "lake")
	obj, err := s3fs.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 2*s3fs.PartSize+12345)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	const name = "s3://lake/t/big"
	st, err := obj.Stage(name, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ETags) != 3 {
		t.Fatalf("%d parts, want 3", len(st.ETags))
	}
	if _, err := obj.Head(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("visible before Complete: %v", err)
	}
	if us, err := obj.Uploads("s3://lake/t"); err != nil || len(us) != 1 || us[0].Name != name || us[0].UploadID != st.UploadID {
		t.Fatalf("uploads %+v, %v", us, err)
	}
	if open, err := obj.UploadExists(name, st.UploadID); !open || err != nil {
		t.Fatalf("UploadExists = %v, %v", open, err)
	}
	if err := obj.Complete(name, st); err != nil {
		t.Fatal(err)
	}
	if err := obj.Complete(name, st); !errors.Is(err, s3fs.ErrNoSuchUpload) {
		t.Fatalf("completed twice: %v", err)
	}
	if open, err := obj.UploadExists(name, st.UploadID); open || err != nil {
		t.Fatalf("UploadExists after Complete = %v, %v", open, err)
	}
	r, err := obj.OpenFrom(name, 100)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data[100:]) {
		t.Fatalf("read from 100: %d bytes, %v", len(got), err)
	}
	var short *s3fs.ShortError
	if _, err := obj.OpenFrom(name, int64(len(data))+1); !errors.As(err, &short) || short.Size != int64(len(data)) {
		t.Fatalf("reading past the end: %v", err)
	}
	ra, err := obj.OpenReaderAt(name)
	if err != nil || ra.Size() != int64(len(data)) {
		t.Fatalf("OpenReaderAt: %v", err)
	}
	buf := make([]byte, 1000)
	if n, err := ra.ReadAt(buf, s3fs.PartSize-500); n != 1000 || err != nil || !bytes.Equal(buf, data[s3fs.PartSize-500:s3fs.PartSize+500]) {
		t.Fatalf("ReadAt across parts: %d, %v", n, err)
	}
	if n, err := ra.ReadAt(buf, int64(len(data))-10); n != 10 || err != io.EOF {
		t.Fatalf("ReadAt at the end: %d, %v", n, err)
	}
	objs, err := obj.Walk("s3://lake/t")
	if err != nil || len(objs) != 1 || objs[0].Size != int64(len(data)) {
		t.Fatalf("Walk: %+v, %v", objs, err)
	}
	// an aborted upload is gone
	st, err = obj.Stage("s3://lake/t/small", bytes.NewReader([]byte("x")), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.Abort("s3://lake/t/small", st.UploadID); err != nil {
		t.Fatal(err)
	}
	if err := obj.Complete("s3://lake/t/small", st); !errors.Is(err, s3fs.ErrNoSuchUpload) {
		t.Fatalf("completing an aborted upload: %v", err)
	}
	if err := obj.CheckBucket("s3://nobucket/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing bucket: %v", err)
	}
}
