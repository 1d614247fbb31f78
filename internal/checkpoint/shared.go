package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// Shared files are the files of incremental checkpoints that several
// checkpoints list: DIR/shared/<name>, name a slash-separated path chosen
// by the writer (weir uses <operator>/<database instance>/<sst file>).
// They are written with Pending.CreateShared (temporary name, fsync,
// rename, directory fsync) or listed again with Pending.ReuseShared, and
// deleted by retention once no checkpoint left in the directory lists them
// (reference counting by listing: the metadata of the checkpoints that
// remain are the references).

// sharedTmpSuffix ends the temporary name of a shared file being written.
const sharedTmpSuffix = ".tmp"

// sharedPath is the path of the shared file name of the store.
func (s *Store) sharedPath(name string) string {
	return filepath.Join(s.dir, SharedDirName, filepath.FromSlash(name))
}

// pin adds d to the pin count of the shared file name.
func (s *Store) pin(name string, d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.pinned[name] += d; s.mu.pinned[name] <= 0 {
		delete(s.mu.pinned, name)
	}
}

func (s *Store) pinnedNames() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.mu.pinned))
	for name := range s.mu.pinned {
		out[name] = true
	}
	return out
}

// SharedFile is a file of the shared area, for listing.
type SharedFile struct {
	Name string
	Size int64
	// Listed by is the ids of the checkpoints that list the file.
	ListedBy []int64
}

// Shared lists the files of the shared area, by name, with the
// checkpoints (complete, with readable metadata) that list each.
func (s *Store) Shared() ([]SharedFile, error) {
	s.commitMu.RLock()
	defer s.commitMu.RUnlock()
	refs, err := s.sharedRefs()
	if err != nil {
		return nil, err
	}
	var out []SharedFile
	err = s.walkShared(func(name string, size int64) {
		out = append(out, SharedFile{Name: name, Size: size, ListedBy: refs[name]})
	}, nil)
	return out, err
}

// sharedRefs maps each shared file that a complete checkpoint in the
// directory lists to the ids of those checkpoints. A checkpoint whose
// metadata is corrupt lists nothing (it cannot be restored); an I/O error
// reading one is returned, so that retention deletes nothing it might
// list.
func (s *Store) sharedRefs() (map[string][]int64, error) {
	entries, err := s.scan()
	if err != nil {
		return nil, err
	}
	refs := map[string][]int64{}
	for _, e := range entries {
		if e.inProgress {
			continue
		}
		mpath := filepath.Join(e.path, metadataName)
		data, err := readAll(s.cfg.fs, mpath, maxMetadataSize+1)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		m, err := decodeMetadata(mpath, data)
		if err != nil {
			continue
		}
		for _, op := range m.Operators {
			for _, f := range op.Files {
				if f.Shared {
					refs[f.Name] = append(refs[f.Name], m.ID)
				}
			}
		}
	}
	return refs, nil
}

// walkShared calls file for every file of the shared area (by
// slash-separated name, temporary files included) and, after a
// directory's entries, dir for the directory (by name, "" for the area's
// root).
func (s *Store) walkShared(file func(name string, size int64), dir func(name string, empty bool)) error {
	root := filepath.Join(s.dir, SharedDirName)
	if _, err := s.cfg.fs.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	var walk func(rel string) (int, error)
	walk = func(rel string) (int, error) {
		des, err := s.cfg.fs.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return 0, fmt.Errorf("checkpoint: %w", withPath("readdir", filepath.Join(root, filepath.FromSlash(rel)), err))
		}
		n := len(des)
		for _, de := range des {
			name := path.Join(rel, de.Name())
			if de.IsDir() {
				left, err := walk(name)
				if err != nil {
					return 0, err
				}
				if dir != nil {
					dir(name, left == 0)
				}
				continue
			}
			if file != nil {
				var size int64
				if info, err := de.Info(); err == nil {
					size = info.Size()
				}
				file(name, size)
			}
		}
		return n, nil
	}
	_, err := walk("")
	return err
}

// gcSharedLocked deletes the shared files that no checkpoint in the
// directory lists and no Pending wrote or reuses, and then the empty
// directories. Failures are logged. s.commitMu must be held.
func (s *Store) gcSharedLocked() {
	refs, err := s.sharedRefs()
	if err != nil {
		s.cfg.logger.Warn("checkpoint: shared-file retention skipped", "err", err)
		return
	}
	var names []string
	if err := s.walkShared(func(name string, _ int64) { names = append(names, name) }, nil); err != nil {
		s.cfg.logger.Warn("checkpoint: shared-file retention skipped", "err", err)
		return
	}
	// Pins are read after the listing: a Pending pins a file before it
	// creates it, so a file listed above that a Pending is writing is
	// pinned by now.
	pinned := s.pinnedNames()
	removed := 0
	for _, name := range names {
		base := strings.TrimSuffix(name, sharedTmpSuffix)
		if len(refs[name]) > 0 || pinned[name] || pinned[base] {
			continue
		}
		if err := s.cfg.fs.Remove(s.sharedPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.cfg.logger.Warn("checkpoint: could not remove unlisted shared file", "file", s.sharedPath(name), "err", err)
			continue
		}
		removed++
	}
	var dirs []string
	s.walkShared(nil, func(name string, empty bool) {
		if empty {
			dirs = append(dirs, name)
		}
	})
dirs:
	for _, d := range dirs {
		for p := range pinned {
			if strings.HasPrefix(p, d+"/") {
				continue dirs
			}
		}
		s.cfg.fs.Remove(s.sharedPath(d)) // best effort: a parent becomes empty only on the next pass
	}
	if removed > 0 {
		s.cfg.logger.Debug("checkpoint: removed unlisted shared files", "files", removed)
		if err := s.cfg.fs.SyncDir(filepath.Join(s.dir, SharedDirName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.cfg.logger.Warn("checkpoint: sync", "err", err)
		}
	}
}

// mkdirAllSync creates dir and its missing parents, and fsyncs the parent
// of each directory it created, so that the new directories are durable.
func mkdirAllSync(fsys FS, dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return withPath("mkdir", dir, err)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		parent := filepath.Dir(missing[i])
		if err := fsys.SyncDir(parent); err != nil {
			return withPath("sync", parent, err)
		}
	}
	return nil
}
