package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpenCheckpoint opens a checkpoint directory made of a fuzzed
// _metadata body (sealed with its correct checksum line) and state files
// of fuzzed content ("a", "b" its first half, and a shared "s/a"), then
// reads every file the metadata lists. Every failure must be an unusable
// checkpoint (*CorruptError or *VersionError naming the file), never a
// panic or an allocation of a size the metadata claims; what ReadFile
// returns must be what the metadata lists (size and CRC-32C).
func FuzzOpenCheckpoint(f *testing.F) {
	content := []byte("state file content")
	crc := checksumOf(content).String()
	f.Add([]byte(`{"format_version": 1, "checkpoint_id": 3, "kind": "checkpoint", "max_parallelism": 4, "operators": [
		{"uid": "w", "parallelism": 2, "files": [{"name": "a", "size": 18, "crc32c": "`+crc+`", "subtask": 1, "key_groups": {"start": 2, "end": 4}},
		{"name": "b", "size": 9, "crc32c": "00000000", "subtask": 0}]}]}`), content)
	f.Add([]byte(`{"format_version": 2, "checkpoint_id": 3, "kind": "checkpoint", "max_parallelism": 4, "operators": [
		{"uid": "w", "parallelism": 1, "files": [{"name": "s/a", "size": 18, "crc32c": "`+crc+`", "shared": true, "uploaded_in": 2}]}]}`), content)
	f.Add([]byte(`{"format_version": 1, "checkpoint_id": 1, "kind": "savepoint", "max_parallelism": 1, "operators": [
		{"uid": "w", "parallelism": 1, "files": [{"name": "a", "size": 1152921504606846976, "crc32c": "00000000"}]}]}`), content)
	f.Add(func() []byte { b, _ := encodeMetadata(goldenMetadata()); return b[:len(b)-trailerLen] }(), []byte{})
	f.Fuzz(func(t *testing.T, body, content []byte) {
		root := t.TempDir()
		dir := filepath.Join(root, "ck")
		write := func(name string, data []byte) {
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		body = append(bytes.TrimSuffix(body, []byte("\n")), '\n')
		write(filepath.Join(dir, metadataName), append(body, "crc32c "+checksumOf(body).String()+"\n"...))
		write(filepath.Join(dir, "a"), content)
		write(filepath.Join(dir, "b"), content[:len(content)/2])
		write(filepath.Join(root, SharedDirName, "s", "a"), content)

		c, err := OpenPath(dir)
		if err != nil {
			if !IsUnusable(err) {
				t.Fatalf("open: error of an unexpected kind: %v", err)
			}
			return
		}
		bad := false
		for _, op := range c.Metadata().Operators {
			for _, fi := range op.Files {
				data, err := c.ReadFile(fi.Name)
				if err != nil {
					if !IsUnusable(err) {
						t.Fatalf("read %s: error of an unexpected kind: %v", fi.Name, err)
					}
					bad = true
					continue
				}
				if int64(len(data)) != fi.Size || checksumOf(data) != fi.CRC32C {
					t.Fatalf("read %s: %d bytes of crc32c %v, listed with %d and %v", fi.Name, len(data), checksumOf(data), fi.Size, fi.CRC32C)
				}
			}
		}
		if err := c.Verify(); (err != nil) != bad {
			t.Fatalf("Verify: %v, but reading the files failed: %v", err, bad)
		}
	})
}
