package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// CommittedDirName is the directory of the store that holds commit
// records: one file per checkpoint or savepoint whose sinks' output the job
// commits (see Store.RecordCommit).
const CommittedDirName = "_committed"

// CommitRecord says that the sinks of a job were told to commit the output
// of a checkpoint or savepoint: restoring an older checkpoint would make
// them commit that output a second time.
type CommitRecord struct {
	// ID is the checkpoint's id, from the record's file name (which a
	// damaged record keeps).
	ID int64 `json:"checkpoint_id"`
	// Kind, Path and Recorded are as recorded: Path is the checkpoint's or
	// savepoint's directory.
	Kind     Kind      `json:"kind"`
	Path     string    `json:"path"`
	Recorded time.Time `json:"recorded"`
	// File is the record's file.
	File string `json:"-"`
	// Err says why the record's content could not be read; the record
	// still counts (its name carries the id).
	Err error `json:"-"`
}

func recordName(id int64) string { return fmt.Sprintf("%010d", id) }

// RecordCommit records, durably, that the output of checkpoint or savepoint
// id (in directory path) is being committed. The caller records before it
// tells the sinks to commit, so that a record exists for every commit that
// may have happened: a crash between the two leaves a record of output
// that was not committed, which errs on the safe side. Recording an id
// again does nothing.
//
// The record is a small file of its own in CommittedDirName (written,
// fsynced, renamed, and the directory fsynced), outside the checkpoint's
// directory: it survives damage to the checkpoint, and records savepoints
// written elsewhere. Retention deletes the records older than every
// checkpoint and savepoint left in the store, which no restore from the
// store can fall back past.
func (s *Store) RecordCommit(id int64, kind Kind, path string) error {
	if s.cfg.readOnly {
		return ErrReadOnly
	}
	fsys := s.cfg.fs
	dir := filepath.Join(s.dir, CommittedDirName)
	file := filepath.Join(dir, recordName(id))
	if _, err := fsys.Stat(file); err == nil {
		return nil
	}
	if err := mkdirAllSync(fsys, dir); err != nil {
		return fmt.Errorf("checkpoint: record commit of %d: %w", id, err)
	}
	rec := CommitRecord{ID: id, Kind: kind, Path: path, Recorded: time.Now().UTC().Round(0)}
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	body = append(body, '\n')
	data := fmt.Appendf(body, "%s%08x\n", trailerPrefix, crc32.Checksum(body, castagnoli))
	if s.inPlace {
		// whole once written: no rename (a copy there)
		if err := writeFileSync(fsys, file, data); err != nil {
			return fmt.Errorf("checkpoint: record commit of %d: %w", id, err)
		}
		return nil
	}
	tmp := file + ".tmp"
	if err := writeFileSync(fsys, tmp, data); err != nil {
		return fmt.Errorf("checkpoint: record commit of %d: %w", id, err)
	}
	if err := fsys.Rename(tmp, file); err != nil {
		return fmt.Errorf("checkpoint: record commit of %d: %w", id, withPath("rename", tmp, err))
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("checkpoint: record commit of %d: %w", id, withPath("sync", dir, err))
	}
	return nil
}

// CommitRecords returns the commit records of the store, by id. A record
// whose content is damaged is returned with Err set: its name still says
// that output of that id was committed.
func (s *Store) CommitRecords() ([]CommitRecord, error) {
	dir := filepath.Join(s.dir, CommittedDirName)
	des, err := s.cfg.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", withPath("readdir", dir, err))
	}
	var recs []CommitRecord
	for _, de := range des {
		id, ok := parseID(de.Name())
		if !ok || de.IsDir() {
			continue // a .tmp file of a crashed RecordCommit, or not ours
		}
		file := filepath.Join(dir, de.Name())
		rec := CommitRecord{ID: id, File: file}
		data, err := readAll(s.cfg.fs, file, 64<<10)
		if err == nil {
			err = decodeRecord(file, data, &rec)
		}
		if err != nil {
			rec = CommitRecord{ID: id, File: file, Err: err}
		}
		recs = append(recs, rec)
	}
	slices.SortFunc(recs, func(a, b CommitRecord) int { return cmp.Compare(a.ID, b.ID) })
	return recs, nil
}

func decodeRecord(file string, data []byte, rec *CommitRecord) error {
	n := len(data) - trailerLen
	if n < 1 || !bytes.HasPrefix(data[n:], []byte(trailerPrefix)) {
		return corruptf(file, "no crc32c checksum line at the end")
	}
	var want Checksum
	if err := want.UnmarshalText(bytes.TrimSuffix(data[n+len(trailerPrefix):], []byte("\n"))); err != nil {
		return corruptf(file, "checksum line: %v", err)
	}
	if got := Checksum(crc32.Checksum(data[:n], castagnoli)); got != want {
		return corruptf(file, "checksum mismatch: content has crc32c %v, file says %v", got, want)
	}
	id := rec.ID
	if err := json.Unmarshal(data[:n], rec); err != nil {
		return corruptf(file, "does not parse: %v", err)
	}
	if rec.ID != id {
		return corruptf(file, "records checkpoint %d, but is named for %d", rec.ID, id)
	}
	return nil
}

// pruneRecordsLocked deletes the commit records older than every
// checkpoint and savepoint in the store (entries, as scanned after
// retention). s.commitMu must be held.
func (s *Store) pruneRecordsLocked(entries []entry) {
	oldest := int64(-1)
	for _, e := range entries {
		if !e.inProgress && (oldest < 0 || e.id < oldest) {
			oldest = e.id
		}
	}
	if oldest < 0 {
		return
	}
	dir := filepath.Join(s.dir, CommittedDirName)
	des, err := s.cfg.fs.ReadDir(dir)
	if err != nil {
		return // none yet, or unreadable: retention is best effort
	}
	for _, de := range des {
		id, ok := parseID(strings.TrimSuffix(de.Name(), ".tmp"))
		if !ok || id >= oldest {
			continue
		}
		if err := s.cfg.fs.Remove(filepath.Join(dir, de.Name())); err != nil {
			s.cfg.logger.Warn("checkpoint: could not remove old commit record", "file", filepath.Join(dir, de.Name()), "err", err)
		}
	}
}

// maxRecordID returns the greatest id of a commit record (0 if none).
func (s *Store) maxRecordID() (int64, error) {
	des, err := s.cfg.fs.ReadDir(filepath.Join(s.dir, CommittedDirName))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("checkpoint: %w", withPath("readdir", filepath.Join(s.dir, CommittedDirName), err))
	}
	var last int64
	for _, de := range des {
		if id, ok := parseID(strings.TrimSuffix(de.Name(), ".tmp")); ok {
			last = max(last, id)
		}
	}
	return last, nil
}
