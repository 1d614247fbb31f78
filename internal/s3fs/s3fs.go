// Package s3fs stores checkpoints and savepoints in object storage: it is
// the checkpoint.FS of paths `s3://bucket/prefix`, over the AWS SDK for
// Go v2 (github.com/aws/aws-sdk-go-v2/service/s3), so that a checkpoint
// directory may be an S3 bucket or any S3-compatible store (MinIO, Ceph,
// R2...). Importing the package registers the scheme with
// checkpoint.RegisterScheme.
//
// # Configuration
//
// Credentials, region and endpoint come from the usual AWS environment,
// as the AWS CLI reads them: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
// AWS_SESSION_TOKEN, AWS_PROFILE and the shared config files, AWS_REGION
// (default us-east-1), instance and container roles; AWS_ENDPOINT_URL_S3
// or AWS_ENDPOINT_URL for an S3-compatible store. With a custom endpoint
// requests use path-style addressing (http://host/bucket/key) unless
// WEIR_S3_PATH_STYLE=false, and checksums are sent only where the API
// requires them (many compatible stores refuse the SDK's newer trailing
// checksums); WEIR_S3_PATH_STYLE=true forces path style on AWS too.
//
// # Semantics
//
// Object storage has keys, not directories: a "directory" is a key
// prefix ending in '/', which exists while an object has it. The FS says
// so to checkpoint stores (AtomicCreate), which then write checkpoints in
// place rather than write and rename. A file is
// written to a local spool file and uploaded when it is closed (in parts
// when large, by the SDK's upload manager), so a reader never sees a
// partial object and Close reports a failed upload; Sync does nothing
// more. Renaming copies on the server and then deletes (a directory:
// each object, the checkpoint's _metadata files last, so that a crash in
// the middle leaves a directory without them, which checkpoints treat as
// incomplete). MkdirAll and SyncDir have nothing to do.
package s3fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/weirstream/weir/internal/checkpoint"
)

func init() {
	checkpoint.RegisterScheme("s3", func() (checkpoint.FS, error) { return FromEnv() })
}

// FS is a checkpoint.FS over one S3 client. Names are `s3://bucket/key`
// (or `s3:/bucket/key`, as filepath.Clean leaves them).
type FS struct {
	client *s3.Client
	// opTimeout bounds each request (an upload: each part).
	opTimeout time.Duration
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*FS{}
)

// FromEnv returns the FS of the environment's configuration (see the
// package documentation), one per distinct configuration.
func FromEnv() (*FS, error) {
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	pathStyle := endpoint != ""
	switch v := strings.ToLower(os.Getenv("WEIR_S3_PATH_STYLE")); v {
	case "":
	case "true", "1":
		pathStyle = true
	case "false", "0":
		pathStyle = false
	default:
		return nil, fmt.Errorf("s3: WEIR_S3_PATH_STYLE=%q: want true or false", v)
	}
	key := strings.Join([]string{endpoint, fmt.Sprint(pathStyle), os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_PROFILE"), os.Getenv("AWS_REGION")}, "\x00")
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if f := cache[key]; f != nil {
		return f, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("s3: loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = pathStyle
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	f := &FS{client: client, opTimeout: 5 * time.Minute}
	cache[key] = f
	return f, nil
}

// New returns the FS of an S3 client.
func New(client *s3.Client) *FS { return &FS{client: client, opTimeout: 5 * time.Minute} }

// split parses `s3://bucket/key` or `s3:/bucket/key`.
func split(name string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(name, "s3://")
	if !ok {
		if rest, ok = strings.CutPrefix(name, "s3:/"); !ok {
			return "", "", &fs.PathError{Op: "s3", Path: name, Err: errors.New("not an s3:// path")}
		}
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", &fs.PathError{Op: "s3", Path: name, Err: errors.New("no bucket")}
	}
	return bucket, strings.Trim(path.Clean("/"+key), "/"), nil
}

// url is a name as users write it.
func url(bucket, key string) string { return "s3://" + bucket + "/" + key }

func (f *FS) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), f.opTimeout)
}

// notFound reports whether err says the object (or bucket) is missing.
func notFound(err error) bool {
	var nk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nk) || errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NotFound" || ae.ErrorCode() == "NoSuchKey")
}

func pathErr(op, bucket, key string, err error) error {
	if notFound(err) {
		err = fmt.Errorf("%w (%v)", fs.ErrNotExist, err)
	}
	return &fs.PathError{Op: op, Path: url(bucket, key), Err: err}
}

// Create implements checkpoint.FS: the file is spooled locally and
// uploaded by Close.
func (f *FS) Create(name string) (checkpoint.File, error) {
	bucket, key, err := split(name)
	if err != nil {
		return nil, err
	}
	spool, err := os.CreateTemp("", "weir-s3-*")
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: url(bucket, key), Err: err}
	}
	os.Remove(spool.Name()) // unlinked: gone with the process whatever happens
	return &writer{f: f, bucket: bucket, key: key, spool: spool}, nil
}

type writer struct {
	f           *FS
	bucket, key string
	spool       *os.File
	closed      bool
}

func (w *writer) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: url(w.bucket, w.key), Err: errors.New("file opened for writing")}
}

func (w *writer) Write(p []byte) (int, error) { return w.spool.Write(p) }

// Sync implements checkpoint.File: the object is durable once Close
// returns.
func (w *writer) Sync() error { return nil }

func (w *writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	defer w.spool.Close()
	if _, err := w.spool.Seek(0, io.SeekStart); err != nil {
		return &fs.PathError{Op: "upload", Path: url(w.bucket, w.key), Err: err}
	}
	ctx, cancel := w.f.ctx()
	defer cancel()
	up := manager.NewUploader(w.f.client)
	if _, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: &w.bucket, Key: &w.key, Body: w.spool}); err != nil {
		return pathErr("upload", w.bucket, w.key, err)
	}
	return nil
}

// Open implements checkpoint.FS.
func (f *FS) Open(name string) (checkpoint.File, error) {
	bucket, key, err := split(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := f.ctx()
	out, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		cancel()
		return nil, pathErr("open", bucket, key, err)
	}
	return &reader{body: out.Body, cancel: cancel, name: url(bucket, key)}, nil
}

type reader struct {
	body   io.ReadCloser
	cancel context.CancelFunc
	name   string
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if err != nil && err != io.EOF {
		err = &fs.PathError{Op: "read", Path: r.name, Err: err}
	}
	return n, err
}

func (r *reader) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: r.name, Err: errors.New("file opened for reading")}
}

func (r *reader) Sync() error { return nil }

func (r *reader) Close() error {
	err := r.body.Close()
	r.cancel()
	return err
}

// list returns the keys under prefix (which ends in '/'), and with delim
// the "subdirectories" instead of their keys.
func (f *FS) list(bucket, prefix string, delim bool) (keys []types.Object, dirs []string, err error) {
	in := &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix}
	if delim {
		in.Delimiter = aws.String("/")
	}
	p := s3.NewListObjectsV2Paginator(f.client, in)
	for p.HasMorePages() {
		ctx, cancel := f.ctx()
		page, err := p.NextPage(ctx)
		cancel()
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, page.Contents...)
		for _, cp := range page.CommonPrefixes {
			dirs = append(dirs, aws.ToString(cp.Prefix))
		}
	}
	return keys, dirs, nil
}

// Rename implements checkpoint.FS: a server-side copy, then a delete; a
// directory's objects one by one, its _metadata files last.
func (f *FS) Rename(oldname, newname string) error {
	ob, ok, err := split(oldname)
	if err != nil {
		return err
	}
	nb, nk, err := split(newname)
	if err != nil {
		return err
	}
	_, herr := f.head(ob, ok)
	if herr == nil {
		if err := f.copy(ob, ok, nb, nk); err != nil {
			return &os.LinkError{Op: "rename", Old: url(ob, ok), New: url(nb, nk), Err: err}
		}
		return f.remove(ob, ok)
	}
	if !notFound(herr) {
		return pathErr("rename", ob, ok, herr)
	}
	objs, _, err := f.list(ob, ok+"/", false)
	if err != nil {
		return pathErr("rename", ob, ok, err)
	}
	if len(objs) == 0 {
		return &os.LinkError{Op: "rename", Old: url(ob, ok), New: url(nb, nk), Err: fs.ErrNotExist}
	}
	last := func(k string) bool { return strings.HasPrefix(path.Base(k), "_metadata") }
	sort.SliceStable(objs, func(i, j int) bool {
		return !last(aws.ToString(objs[i].Key)) && last(aws.ToString(objs[j].Key))
	})
	for _, o := range objs {
		k := aws.ToString(o.Key)
		if err := f.copy(ob, k, nb, nk+"/"+strings.TrimPrefix(k, ok+"/")); err != nil {
			return &os.LinkError{Op: "rename", Old: url(ob, k), New: url(nb, nk), Err: err}
		}
	}
	return f.removeAll(ob, ok, objs)
}

func (f *FS) copy(ob, ok, nb, nk string) error {
	ctx, cancel := f.ctx()
	defer cancel()
	src := ob + "/" + ok
	_, err := f.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &nb, Key: &nk, CopySource: &src})
	return err
}

func (f *FS) remove(bucket, key string) error {
	ctx, cancel := f.ctx()
	defer cancel()
	if _, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key}); err != nil && !notFound(err) {
		return pathErr("remove", bucket, key, err)
	}
	return nil
}

// Remove implements checkpoint.FS (a missing object is no error: S3 does
// not say).
func (f *FS) Remove(name string) error {
	bucket, key, err := split(name)
	if err != nil {
		return err
	}
	return f.remove(bucket, key)
}

// RemoveAll implements checkpoint.FS.
func (f *FS) RemoveAll(name string) error {
	bucket, key, err := split(name)
	if err != nil {
		return err
	}
	objs, _, err := f.list(bucket, key+"/", false)
	if err != nil {
		return pathErr("removeall", bucket, key, err)
	}
	if err := f.removeAll(bucket, key, objs); err != nil {
		return err
	}
	return f.remove(bucket, key)
}

func (f *FS) removeAll(bucket, key string, objs []types.Object) error {
	for len(objs) > 0 {
		n := min(len(objs), 1000)
		ids := make([]types.ObjectIdentifier, n)
		for i, o := range objs[:n] {
			ids[i] = types.ObjectIdentifier{Key: o.Key}
		}
		ctx, cancel := f.ctx()
		out, err := f.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		cancel()
		if err != nil {
			return pathErr("removeall", bucket, key, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return pathErr("removeall", bucket, aws.ToString(e.Key), fmt.Errorf("%s: %s", aws.ToString(e.Code), aws.ToString(e.Message)))
		}
		objs = objs[n:]
	}
	return nil
}

// AtomicCreate says that a created file appears whole when closed (an
// upload) and that renames copy: checkpoint stores write in place here.
func (f *FS) AtomicCreate() bool { return true }

// MkdirAll implements checkpoint.FS: prefixes need no creating.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	_, _, err := split(name)
	return err
}

// SyncDir implements checkpoint.FS: nothing to make durable.
func (f *FS) SyncDir(name string) error {
	_, _, err := split(name)
	return err
}

// ReadDir implements checkpoint.FS: the objects and prefixes right below
// name, sorted; a prefix that has none is empty (not an error).
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	bucket, key, err := split(name)
	if err != nil {
		return nil, err
	}
	prefix := dirPrefix(key)
	objs, dirs, err := f.list(bucket, prefix, true)
	if err != nil {
		return nil, pathErr("readdir", bucket, key, err)
	}
	var out []fs.DirEntry
	for _, o := range objs {
		n := strings.TrimPrefix(aws.ToString(o.Key), prefix)
		if n == "" {
			continue
		}
		out = append(out, fs.FileInfoToDirEntry(info{name: n, size: aws.ToInt64(o.Size), mod: aws.ToTime(o.LastModified)}))
	}
	for _, d := range dirs {
		out = append(out, fs.FileInfoToDirEntry(info{name: strings.TrimSuffix(strings.TrimPrefix(d, prefix), "/"), dir: true}))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Stat implements checkpoint.FS: an object, else a prefix with objects.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	bucket, key, err := split(name)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return info{name: bucket, dir: true}, nil
	}
	o, err := f.head(bucket, key)
	if err == nil {
		return info{name: path.Base(key), size: o.Size, mod: o.ModTime}, nil
	}
	if !notFound(err) {
		return nil, pathErr("stat", bucket, key, err)
	}
	prefix := key + "/"
	ctx, cancel := f.ctx()
	page, err := f.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	cancel()
	if err != nil {
		return nil, pathErr("stat", bucket, key, err)
	}
	if len(page.Contents) == 0 {
		return nil, &fs.PathError{Op: "stat", Path: url(bucket, key), Err: fs.ErrNotExist}
	}
	return info{name: path.Base(key), dir: true}, nil
}

type info struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (i info) Name() string { return i.name }
func (i info) Size() int64  { return i.size }
func (i info) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i info) ModTime() time.Time { return i.mod }
func (i info) IsDir() bool        { return i.dir }
func (i info) Sys() any           { return nil }
