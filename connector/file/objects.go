package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/s3fs"
)

// An ExactlyOnce sink on object storage (dir `s3://bucket/prefix`) works
// as Flink's S3 file sink does: nothing is visible until a checkpoint
// commits, and committing needs no rename (S3 has none: a rename is a
// copy). A writer spools its in-progress part files to unlinked local
// files (in os.TempDir); PreCommit uploads each as a multipart upload of
// its final key, all parts and not completed, and lists the upload's id
// and parts in the committable; Commit completes the uploads, which makes
// each object appear whole. Commit is idempotent as on a local disk: an
// upload that no longer exists while its object does with the committed
// size was completed before. Recover aborts the open uploads that the
// local sink's Recover would delete as pending files (those of a
// checkpoint after the restored one), with the same rules of which
// subtask considers which; uploads of an attempt that crashed while
// uploading are aborted by the same rule, or, where none matches, left
// to the bucket's lifecycle rule for incomplete multipart uploads, as
// Flink leaves them.

// join is a name below the sink's directory.
func (s *eoSink[T]) join(elem ...string) string {
	if s.obj == nil {
		return filepath.Join(append([]string{s.dir}, elem...)...)
	}
	return joinObject(s.dir, elem...)
}

// joinObject joins an s3:// directory and relative names.
func joinObject(dir string, elem ...string) string {
	rel := path.Join(elem...)
	if rel == "" || rel == "." {
		return dir
	}
	return dir + "/" + filepath.ToSlash(rel)
}

// join is a name below a committable's directory.
func (c *eoCommitter) join(dir, rel string) string {
	if s3fs.IsURL(dir) {
		return joinObject(dir, rel)
	}
	return filepath.Join(dir, rel)
}

// objects is the store of a committable on object storage.
func (c *eoCommitter) objects() (*s3fs.FS, error) {
	if c.obj != nil {
		return c.obj, nil
	}
	return s3fs.FromEnv()
}

// newSpool creates the local file an in-progress part file of object
// storage is written to, unlinked (gone with the process whatever
// happens).
func newSpool(name string) (partFile, *os.File, error) {
	f, err := os.CreateTemp("", "weir-part-*")
	if err != nil {
		return nil, nil, fmt.Errorf("a local spool file for %s: %w", name, err)
	}
	os.Remove(f.Name())
	return f, f, nil
}

// stage uploads a finished part file as a multipart upload of its final
// name (relative to the sink's directory), not completed.
func (w *eoWriter[T]) stage(p part, final string) (committableFile, error) {
	defer p.spool.Close()
	st, err := w.s.obj.Stage(w.s.join(final), p.spool, p.size)
	if err != nil {
		return committableFile{}, fmt.Errorf("file: pre-commit: %w", err)
	}
	return committableFile{Final: final, Size: p.size, Upload: st.UploadID, Parts: st.ETags}, nil
}

// successSince says whether partition b's success file exists and, by
// partition time, was written at or after created (unix milliseconds).
func (w *eoWriter[T]) successSince(b string, created int64) bool {
	if w.s.obj == nil {
		fi, err := os.Lstat(filepath.Join(w.s.dir, b, w.s.success))
		return err == nil && (w.s.partTime == nil || fi.ModTime().UnixMilli() >= created)
	}
	o, err := w.s.obj.Head(w.s.join(b, w.s.success))
	// S3's modification times have whole seconds
	return err == nil && (w.s.partTime == nil || o.ModTime.UnixMilli() >= created-created%1000)
}

// objectPart parses the name of a sink's object relative to its
// directory: a part file in the directory, or (partitioned) in a
// partition's directory.
func (w *eoWriter[T]) objectPart(rel string) (dir string, ckpt int64, subtask int, ok bool) {
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir != "" {
		if w.s.partition == nil {
			return "", 0, 0, false
		}
		for _, seg := range strings.Split(dir, "/") {
			if seg == "" || strings.HasPrefix(seg, ".") || strings.HasPrefix(seg, "_") {
				return "", 0, 0, false
			}
		}
	}
	ckpt, subtask, _, ok = parsePartName(base)
	return dir, ckpt, subtask, ok
}

// recoverObjects is Recover on object storage.
func (w *eoWriter[T]) recoverObjects(restoredID int64) error {
	uploads, err := w.s.obj.Uploads(w.s.dir)
	if err != nil {
		return fmt.Errorf("file: recover: %w", err)
	}
	own := map[string]bool{}
	for _, f := range w.staged {
		own[f.Upload] = true
	}
	var errs []error
	for _, u := range uploads {
		_, ckpt, sub, ok := w.objectPart(strings.TrimPrefix(u.Name, w.s.dir+"/"))
		if !ok || own[u.UploadID] {
			continue
		}
		if sub != w.subtask && (w.subtask != 0 || sub < w.parallelism) {
			continue // another subtask's
		}
		if restoredID > 0 && ckpt <= restoredID {
			continue // committed by now, or to be committed: see ExactlyOnce
		}
		if err := w.s.obj.Abort(u.Name, u.UploadID); err != nil {
			errs = append(errs, fmt.Errorf("file: recover: %w", err))
		}
	}
	if w.s.success == "" || w.subtask != 0 {
		return errors.Join(errs...)
	}
	// Partitions committed by the restored checkpoint whose success file
	// was not written yet: subtask 0 takes them over.
	objs, err := w.s.obj.Walk(w.s.dir)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("file: recover: %w", err))...)
	}
	committed, succeeded := map[string]bool{}, map[string]bool{}
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Name, w.s.dir+"/")
		if d, b := path.Split(rel); b == w.s.success {
			succeeded[strings.TrimSuffix(d, "/")] = true
		} else if d, _, _, ok := w.objectPart(rel); ok && d != "" {
			committed[d] = true
		}
	}
	for d := range committed {
		if b := filepath.FromSlash(d); !succeeded[d] && w.parts[b] == nil {
			w.parts[b] = &openPartition{created: w.s.now().UnixMilli()}
		}
	}
	return errors.Join(errs...)
}

// commitObject commits one file of a committable on object storage: it
// completes its upload. As commit does on a local disk, it never
// overwrites an object, and fails for good when the output is lost.
func (c *eoCommitter) commitObject(dir string, f committableFile) error {
	if f.Upload == "" || !filepath.IsLocal(f.Final) || f.Size < 0 {
		return weir.Permanent(fmt.Errorf("file: commit to %s: malformed committable: file %q, upload %q", dir, f.Final, f.Upload))
	}
	if _, _, _, ok := parsePartName(path.Base(filepath.ToSlash(f.Final))); !ok {
		return weir.Permanent(fmt.Errorf("file: commit to %s: malformed committable: file %q", dir, f.Final))
	}
	obj, err := c.objects()
	if err != nil {
		return fmt.Errorf("file: commit to %s: %w", dir, err)
	}
	name := joinObject(dir, f.Final)
	committedBefore := func(o s3fs.Object) error {
		if o.Size != f.Size {
			return weir.Permanent(fmt.Errorf("file: commit: committed object %s has %d bytes, the committable says %d", name, o.Size, f.Size))
		}
		return nil
	}
	o, err := obj.Head(name)
	switch {
	case err == nil:
		open, err := obj.UploadExists(name, f.Upload)
		if err != nil {
			return fmt.Errorf("file: commit: %w", err)
		}
		if open {
			return weir.Permanent(fmt.Errorf("file: commit upload %s: %s already exists (not overwritten)", f.Upload, name))
		}
		return committedBefore(o)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("file: commit: %w", err)
	}
	err = obj.Complete(name, s3fs.Staged{UploadID: f.Upload, ETags: f.Parts})
	if err == nil {
		return nil
	}
	if !errors.Is(err, s3fs.ErrNoSuchUpload) {
		return fmt.Errorf("file: commit: %w", err)
	}
	// completed meanwhile (a retry), or lost
	o, herr := obj.Head(name)
	switch {
	case herr == nil:
		return committedBefore(o)
	case errors.Is(herr, fs.ErrNotExist):
		return weir.Permanent(fmt.Errorf("file: commit: neither the upload %s nor the object %s exists: the output of this checkpoint is lost", f.Upload, name))
	default:
		return fmt.Errorf("file: commit: %w", herr)
	}
}

// uploadsUpTo says whether an s3:// partition directory has an open
// upload of a part file of checkpoint ckpt or an earlier one.
func (c *eoCommitter) uploadsUpTo(dir string, ckpt int64) (bool, error) {
	obj, err := c.objects()
	if err != nil {
		return false, fmt.Errorf("file: commit to %s: %w", dir, err)
	}
	uploads, err := obj.Uploads(dir)
	if err != nil {
		return false, fmt.Errorf("file: commit: %w", err)
	}
	for _, u := range uploads {
		rel := strings.TrimPrefix(u.Name, dir+"/")
		if strings.Contains(rel, "/") {
			continue
		}
		if k, _, _, ok := parsePartName(rel); ok && k <= ckpt {
			return true, nil
		}
	}
	return false, nil
}
