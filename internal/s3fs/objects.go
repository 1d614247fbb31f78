package s3fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// What follows serves the filesystem connector (connector/file and the
// SQL filesystem tables) on s3:// paths: listing and reading objects, and
// the staged writes of its exactly-once sink, which upload a part file as
// a multipart upload and complete it only when the checkpoint commits, as
// Flink's S3 writer does.

// IsURL reports whether name is an s3:// path.
func IsURL(name string) bool {
	return strings.HasPrefix(name, "s3://") || strings.HasPrefix(name, "s3:/")
}

// Clean returns name as `s3://bucket/key` (no trailing slash, no empty or
// dot segments), or an error for a name without a bucket.
func Clean(name string) (string, error) {
	bucket, key, err := split(name)
	if err != nil {
		return "", err
	}
	if key == "" {
		return "s3://" + bucket, nil
	}
	return url(bucket, key), nil
}

// Object is an object listed by Walk.
type Object struct {
	Name    string // s3://bucket/key
	Size    int64
	ModTime time.Time
}

// Walk lists the objects at or below name (a key prefix taken as a
// directory: `s3://b/dir` lists `dir/...`), sorted by key. An object
// named name itself is returned alone.
func (f *FS) Walk(name string) ([]Object, error) {
	bucket, key, err := split(name)
	if err != nil {
		return nil, err
	}
	if key != "" {
		o, err := f.head(bucket, key)
		if err == nil {
			return []Object{o}, nil
		}
		if !notFound(err) {
			return nil, pathErr("list", bucket, key, err)
		}
	}
	objs, _, err := f.list(bucket, dirPrefix(key), false)
	if err != nil {
		return nil, pathErr("list", bucket, key, err)
	}
	out := make([]Object, 0, len(objs))
	for _, o := range objs {
		k := aws.ToString(o.Key)
		if strings.HasSuffix(k, "/") {
			continue // a "directory marker" some tools create
		}
		out = append(out, Object{Name: url(bucket, k), Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Head returns the size and modification time of an object; an error
// matching fs.ErrNotExist when there is none.
func (f *FS) Head(name string) (Object, error) {
	bucket, key, err := split(name)
	if err != nil {
		return Object{}, err
	}
	o, err := f.head(bucket, key)
	if err != nil {
		return Object{}, pathErr("stat", bucket, key, err)
	}
	return o, nil
}

// head asks for an object's size and modification time.
func (f *FS) head(bucket, key string) (Object, error) {
	ctx, cancel := f.ctx()
	defer cancel()
	out, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return Object{}, err
	}
	return Object{Name: url(bucket, key), Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// dirPrefix is the key prefix of the objects below key taken as a
// directory ("" for the bucket's root).
func dirPrefix(key string) string {
	if key == "" {
		return ""
	}
	return key + "/"
}

// ShortError says that an object is shorter than the offset asked to
// read from: it was replaced since that offset was reached.
type ShortError struct {
	Name      string
	Size, Off int64
}

func (e *ShortError) Error() string {
	return fmt.Sprintf("%s has %d bytes, fewer than the position %d to read from: it was replaced", e.Name, e.Size, e.Off)
}

// OpenFrom opens an object for reading from byte off; from off > 0, an
// object shorter than off is a *ShortError.
func (f *FS) OpenFrom(name string, off int64) (io.ReadCloser, error) {
	bucket, key, err := split(name)
	if err != nil {
		return nil, err
	}
	if off > 0 {
		o, err := f.head(bucket, key)
		if err != nil {
			return nil, pathErr("open", bucket, key, err)
		}
		if o.Size < off {
			return nil, &ShortError{Name: url(bucket, key), Size: o.Size, Off: off}
		}
	}
	// The body is read for as long as the reader is used: no timeout.
	ctx, cancel := context.WithCancel(context.Background())
	in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
	if off > 0 {
		in.Range = aws.String("bytes=" + strconv.FormatInt(off, 10) + "-")
	}
	out, err := f.client.GetObject(ctx, in)
	if err != nil {
		cancel()
		return nil, pathErr("open", bucket, key, err)
	}
	return &reader{body: out.Body, cancel: cancel, name: url(bucket, key)}, nil
}

// ReadFile reads a whole object.
func (f *FS) ReadFile(name string) ([]byte, error) {
	r, err := f.OpenFrom(name, 0)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// ReaderAt is an object read by ranged requests.
type ReaderAt struct {
	f           *FS
	bucket, key string
	size        int64
}

// OpenReaderAt returns a ReaderAt of an object and its size.
func (f *FS) OpenReaderAt(name string) (*ReaderAt, error) {
	o, err := f.Head(name)
	if err != nil {
		return nil, err
	}
	bucket, key, _ := split(name)
	return &ReaderAt{f: f, bucket: bucket, key: key, size: o.Size}, nil
}

// Size is the object's size in bytes.
func (r *ReaderAt) Size() int64 { return r.size }

// ReadAt implements io.ReaderAt with one ranged GET.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	end := min(off+int64(len(p)), r.size) - 1
	ctx, cancel := r.f.ctx()
	defer cancel()
	out, err := r.f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &r.bucket, Key: &r.key,
		Range: aws.String("bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(end, 10))})
	if err != nil {
		return 0, pathErr("read", r.bucket, r.key, err)
	}
	defer out.Body.Close()
	n, err := io.ReadFull(out.Body, p[:end-off+1])
	if err != nil {
		return n, &fs.PathError{Op: "read", Path: url(r.bucket, r.key), Err: err}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Put writes a whole object in one request.
func (f *FS) Put(name string, data []byte) error {
	bucket, key, err := split(name)
	if err != nil {
		return err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	if _, err := f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data)))}); err != nil {
		return pathErr("put", bucket, key, err)
	}
	return nil
}

// PartSize is the size of the parts of a staged upload (S3 wants at least
// 5 MiB for all parts but the last, and at most 10,000 parts).
const PartSize = 8 << 20

// Staged is a multipart upload whose parts are all uploaded and which is
// not completed: the object does not exist until Complete.
type Staged struct {
	UploadID string   `json:"upload"`
	ETags    []string `json:"parts"` // of parts 1, 2, ...
}

// Stage uploads size bytes of r as a multipart upload of object name,
// without completing it. The parts are uploaded four at a time.
func (f *FS) Stage(name string, r io.ReaderAt, size int64) (Staged, error) {
	bucket, key, err := split(name)
	if err != nil {
		return Staged{}, err
	}
	ctx, cancel := f.ctx()
	out, err := f.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	cancel()
	if err != nil {
		return Staged{}, pathErr("start upload", bucket, key, err)
	}
	st := Staged{UploadID: aws.ToString(out.UploadId)}
	partSize := max(int64(PartSize), (size+9999)/10000)
	n := max(1, int((size+partSize-1)/partSize))
	st.ETags = make([]string, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range n {
		off := int64(i) * partSize
		length := min(partSize, size-off)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := f.ctx()
			defer cancel()
			part, err := f.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: out.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: io.NewSectionReader(r, off, length), ContentLength: aws.Int64(length)})
			if err != nil {
				errs[i] = pathErr(fmt.Sprintf("upload part %d of", i+1), bucket, key, err)
				return
			}
			st.ETags[i] = aws.ToString(part.ETag)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		f.Abort(name, st.UploadID)
		return Staged{}, err
	}
	return st, nil
}

// ErrNoSuchUpload is matched (errors.Is) by the error of Complete for an
// upload that does not exist (any more): completed or aborted before.
var ErrNoSuchUpload = errors.New("no such upload")

func noSuchUpload(err error) bool {
	var nu *types.NoSuchUpload
	var ae smithy.APIError
	return errors.As(err, &nu) || errors.As(err, &ae) && ae.ErrorCode() == "NoSuchUpload"
}

// Complete completes a staged upload: the object appears, whole.
func (f *FS) Complete(name string, st Staged) error {
	bucket, key, err := split(name)
	if err != nil {
		return err
	}
	parts := make([]types.CompletedPart, len(st.ETags))
	for i, e := range st.ETags {
		parts[i] = types.CompletedPart{ETag: aws.String(e), PartNumber: aws.Int32(int32(i + 1))}
	}
	ctx, cancel := f.ctx()
	defer cancel()
	_, err = f.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key,
		UploadId: aws.String(st.UploadID), MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		if noSuchUpload(err) {
			err = fmt.Errorf("%w %s (%v)", ErrNoSuchUpload, st.UploadID, err)
		}
		return &fs.PathError{Op: "complete upload", Path: url(bucket, key), Err: err}
	}
	return nil
}

// UploadExists reports whether a multipart upload is still open (neither
// completed nor aborted).
func (f *FS) UploadExists(name, uploadID string) (bool, error) {
	bucket, key, err := split(name)
	if err != nil {
		return false, err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	_, err = f.client.ListParts(ctx, &s3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: &uploadID, MaxParts: aws.Int32(1)})
	switch {
	case err == nil:
		return true, nil
	case noSuchUpload(err) || notFound(err):
		return false, nil
	default:
		return false, pathErr("list parts of", bucket, key, err)
	}
}

// Abort aborts a multipart upload; one that is gone is no error.
func (f *FS) Abort(name, uploadID string) error {
	bucket, key, err := split(name)
	if err != nil {
		return err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	if _, err := f.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: &uploadID}); err != nil && !noSuchUpload(err) && !notFound(err) {
		return pathErr("abort upload", bucket, key, err)
	}
	return nil
}

// Upload is an open multipart upload listed by Uploads.
type Upload struct {
	Name     string // s3://bucket/key of the object it would create
	UploadID string
}

// Uploads lists the open multipart uploads of objects at or below name
// (a key prefix taken as a directory).
func (f *FS) Uploads(name string) ([]Upload, error) {
	bucket, key, err := split(name)
	if err != nil {
		return nil, err
	}
	prefix := dirPrefix(key)
	var out []Upload
	in := &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: &prefix}
	for {
		ctx, cancel := f.ctx()
		page, err := f.client.ListMultipartUploads(ctx, in)
		cancel()
		if err != nil {
			if noSuchUpload(err) {
				return out, nil // (gofakes3, for a bucket that never had one)
			}
			return nil, pathErr("list uploads of", bucket, key, err)
		}
		for _, u := range page.Uploads {
			out = append(out, Upload{Name: url(bucket, aws.ToString(u.Key)), UploadID: aws.ToString(u.UploadId)})
		}
		if !aws.ToBool(page.IsTruncated) {
			return out, nil
		}
		in.KeyMarker, in.UploadIdMarker = page.NextKeyMarker, page.NextUploadIdMarker
	}
}

// CheckBucket checks that the bucket of name exists and can be reached.
func (f *FS) CheckBucket(name string) error {
	bucket, _, err := split(name)
	if err != nil {
		return err
	}
	ctx, cancel := f.ctx()
	defer cancel()
	if _, err := f.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket}); err != nil {
		if notFound(err) {
			return &fs.PathError{Op: "open bucket", Path: "s3://" + bucket, Err: fmt.Errorf("%w: the bucket does not exist (%v)", fs.ErrNotExist, err)}
		}
		return &fs.PathError{Op: "open bucket", Path: "s3://" + bucket, Err: err}
	}
	return nil
}
