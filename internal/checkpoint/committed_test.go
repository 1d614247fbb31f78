package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// repairable are the corruptions of _metadata that one bad copy can
// suffer (a bad sector, a torn or lost file): the other copy repairs them.
// A newer format version is not damage, and a metadata file of another
// checkpoint with a valid checksum is not what a bad sector makes.
func repairable() []string {
	var names []string
	for _, tc := range corruptions {
		if breaksMetadata(tc.name) && tc.name != "newer format version" && tc.name != "metadata of another checkpoint" {
			names = append(names, tc.name)
		}
	}
	return names
}

func corruption(name string) func(*testing.T, string) {
	for _, tc := range corruptions {
		if tc.name == name {
			return tc.break_
		}
	}
	panic(name)
}

// breakCopy applies a corruption written for _metadata to _metadata.copy.
func breakCopy(t *testing.T, dir string, break_ func(*testing.T, string)) {
	t.Helper()
	m, c, aside := filepath.Join(dir, metadataName), filepath.Join(dir, metadataCopyName), filepath.Join(dir, "aside")
	for _, mv := range [][2]string{{m, aside}, {c, m}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	break_(t, dir)
	if _, err := os.Stat(m); err == nil {
		if err := os.Rename(m, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(aside, m); err != nil {
		t.Fatal(err)
	}
}

// TestOneBadMetadataCopyIsRepaired: whichever of the two copies of the
// newest checkpoint's metadata is damaged, Latest restores that checkpoint
// (no fallback) and rewrites the damaged copy from the good one; a
// read-only store reads it without repairing.
func TestOneBadMetadataCopyIsRepaired(t *testing.T) {
	for _, name := range repairable() {
		for _, which := range []string{metadataName, metadataCopyName} {
			if which == metadataCopyName && name == "missing metadata" {
				continue // a checkpoint without a copy: TestCheckpointWithoutCopyReads
			}
			t.Run(name+" of "+which, func(t *testing.T) {
				s, logs := openStore(t)
				mustWrite(t, s, 1, 2)
				dir := chkPath(s, 2)
				good, err := os.ReadFile(filepath.Join(dir, metadataName))
				if err != nil {
					t.Fatal(err)
				}
				if which == metadataName {
					corruption(name)(t, dir)
				} else {
					breakCopy(t, dir, corruption(name))
				}
				ro, err := Open(s.Dir(), ReadOnly(), WithLogger(s.cfg.logger))
				if err != nil {
					t.Fatal(err)
				}
				checkContents(t, wantLatest(t, ro, 2))
				if got, _ := os.ReadFile(filepath.Join(dir, which)); bytes.Equal(got, good) {
					t.Fatalf("a read-only store repaired %s", which)
				}
				checkContents(t, wantLatest(t, s, 2))
				for _, f := range []string{metadataName, metadataCopyName} {
					if got, err := os.ReadFile(filepath.Join(dir, f)); err != nil || !bytes.Equal(got, good) {
						t.Fatalf("%s after the repair: %d bytes, %v; want the %d good ones", f, len(got), err, len(good))
					}
				}
				wantContains(t, "log", logs.String(), "repaired a damaged copy", filepath.Join(dir, which))
			})
		}
	}
}

// TestBothMetadataCopiesBad: with both copies damaged the checkpoint is
// unusable, and the reason names both.
func TestBothMetadataCopiesBad(t *testing.T) {
	s, logs := openStore(t)
	mustWrite(t, s, 1, 2)
	dir := chkPath(s, 2)
	corruption("bit flip in metadata body")(t, dir)
	breakCopy(t, dir, corruption("truncated metadata"))
	wantLatest(t, s, 1)
	wantContains(t, "log", logs.String(), "skipping unusable checkpoint", "checksum mismatch", "its copy _metadata.copy too", "no crc32c checksum line")
}

// TestCheckpointWithoutCopyReads: checkpoints written before the copy
// existed (no _metadata.copy) read as before, and are not given one.
func TestCheckpointWithoutCopyReads(t *testing.T) {
	s, _ := openStore(t)
	mustWrite(t, s, 1)
	dir := chkPath(s, 1)
	if err := os.Remove(filepath.Join(dir, metadataCopyName)); err != nil {
		t.Fatal(err)
	}
	checkContents(t, wantLatest(t, s, 1))
	if _, err := os.Stat(filepath.Join(dir, metadataCopyName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a copy appeared: %v", err)
	}
}

// TestCommitRecords: records are durable files by id, idempotent, counted
// by NextID, kept when damaged, refused on a read-only store, and pruned
// with the checkpoints they are older than.
func TestCommitRecords(t *testing.T) {
	s, _ := openStore(t, Retain(2))
	mustWrite(t, s, 1, 2)
	for _, id := range []int64{1, 2, 2} {
		if err := s.RecordCommit(id, KindCheckpoint, chkPath(s, id)); err != nil {
			t.Fatal(err)
		}
	}
	// A savepoint elsewhere, with a greater id: ids must not be reused.
	if err := s.RecordCommit(7, KindSavepoint, "/elsewhere/sp"); err != nil {
		t.Fatal(err)
	}
	recs, err := s.CommitRecords()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].ID != 1 || recs[1].ID != 2 || recs[2].ID != 7 || recs[2].Path != "/elsewhere/sp" || recs[2].Kind != KindSavepoint || recs[1].Err != nil {
		t.Fatalf("records: %+v", recs)
	}
	if next, err := s.NextID(); err != nil || next != 8 {
		t.Fatalf("NextID = %d, %v; want 8 (past the recorded savepoint)", next, err)
	}
	// A damaged record still counts, by its name.
	flipBit(t, recs[1].File, 5)
	recs, err = s.CommitRecords()
	if err != nil || len(recs) != 3 || recs[1].ID != 2 || !errors.Is(recs[1].Err, ErrCorrupt) {
		t.Fatalf("after damage: %+v, %v", recs, err)
	}
	ro, err := Open(s.Dir(), ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.RecordCommit(9, KindCheckpoint, "x"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only RecordCommit: %v", err)
	}
	// Retention of 2 drops checkpoint 1 once 8 is written, and with it
	// the record of 1 (no restore can fall back below checkpoint 2).
	mustWrite(t, s, 8)
	recs, err = s.CommitRecords()
	if err != nil || len(recs) != 2 || recs[0].ID != 2 {
		t.Fatalf("after retention: %+v, %v", recs, err)
	}
}
