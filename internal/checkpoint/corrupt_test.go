package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corruptions break checkpoint dir in one way each; reason is part of the
// error Latest logs, or "" when Latest cannot see the damage (a flipped bit
// in a state file: only reading the file finds it).
var corruptions = []struct {
	name   string
	break_ func(t *testing.T, dir string)
	reason string
}{
	{"bit flip in state file", func(t *testing.T, dir string) {
		flipBit(t, filepath.Join(dir, "window.1"), 17)
	}, ""},
	{"bit flip in metadata body", func(t *testing.T, dir string) {
		flipBit(t, filepath.Join(dir, metadataName), 40)
	}, "checksum mismatch"},
	{"bit flip in metadata checksum", func(t *testing.T, dir string) {
		flipBit(t, filepath.Join(dir, metadataName), -3)
	}, "checksum"},
	{"truncated metadata", func(t *testing.T, dir string) {
		if err := os.Truncate(filepath.Join(dir, metadataName), 100); err != nil {
			t.Fatal(err)
		}
	}, "no crc32c checksum line"},
	{"truncated state file", func(t *testing.T, dir string) {
		if err := os.Truncate(filepath.Join(dir, "window.0"), 1000); err != nil {
			t.Fatal(err)
		}
	}, "1000 bytes, listed with"},
	{"extended state file", func(t *testing.T, dir string) {
		f, err := os.OpenFile(filepath.Join(dir, "window.2"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("junk"))
		f.Close()
	}, "listed with"},
	{"missing state file", func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, "window.2")); err != nil {
			t.Fatal(err)
		}
	}, "window.2: missing"},
	{"missing metadata", func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, metadataName)); err != nil {
			t.Fatal(err)
		}
	}, "no _metadata file"},
	{"empty metadata", func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, metadataName), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}, "checksum line"},
	{"newer format version", func(t *testing.T, dir string) {
		rewriteMetadata(t, dir, func(body string) string {
			return strings.Replace(body, `"format_version": 1`, `"format_version": 3`, 1)
		})
	}, "unsupported format version 3"},
	{"metadata of another checkpoint", func(t *testing.T, dir string) {
		rewriteMetadata(t, dir, func(body string) string {
			return strings.Replace(body, `"checkpoint_id": 2`, `"checkpoint_id": 1`, 1)
		})
	}, "checkpoint id 1, but the directory is named for 2"},
	{"metadata with a valid checksum but bad content", func(t *testing.T, dir string) {
		rewriteMetadata(t, dir, func(body string) string {
			return strings.Replace(body, `"max_parallelism": 128`, `"max_parallelism": 0`, 1)
		})
	}, "max parallelism 0"},
	{"metadata that is not JSON", func(t *testing.T, dir string) {
		rewriteMetadata(t, dir, func(body string) string { return body[:len(body)/2] + "\n" })
	}, "does not parse"},
}

// rewriteMetadata edits the JSON of dir's _metadata and gives it a valid
// checksum, as a buggy or newer writer would.
func rewriteMetadata(t *testing.T, dir string, edit func(string) string) {
	t.Helper()
	path := filepath.Join(dir, metadataName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body := edit(string(data[:len(data)-trailerLen]))
	data = fmt.Appendf([]byte(body), "crc32c %v\n", checksumOf([]byte(body)))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// breaksMetadata reports whether a corruption damages _metadata (rather
// than a state file).
func breaksMetadata(name string) bool {
	return strings.Contains(name, "metadata") || strings.Contains(name, "format version")
}

// breakBoth applies a corruption of _metadata to its copy too: a checkpoint
// falls back only when both are bad.
func breakBoth(t *testing.T, dir string, name string, break_ func(*testing.T, string)) {
	t.Helper()
	break_(t, dir)
	if breaksMetadata(name) {
		if err := os.Remove(filepath.Join(dir, metadataCopyName)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCorruptNewestFallsBack(t *testing.T) {
	for _, tc := range corruptions {
		t.Run(tc.name, func(t *testing.T) {
			s, logs := openStore(t)
			mustWrite(t, s, 1, 2)
			dir := chkPath(s, 2)
			breakBoth(t, dir, tc.name, tc.break_)

			if tc.reason == "" {
				// Invisible to Latest; found on read and by Verify.
				c := wantLatest(t, s, 2)
				_, err := c.ReadFile("window.1")
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Path != filepath.Join(dir, "window.1") {
					t.Fatalf("ReadFile: %v, want a *CorruptError for window.1", err)
				}
				wantContains(t, "error", err.Error(), "checksum mismatch")
				if err := c.Verify(); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Verify: %v", err)
				}
				if _, err := c.ReadFile("window.0"); err != nil {
					t.Fatalf("an intact file: %v", err)
				}
				// With VerifyContents, Latest reads the files and falls back.
				s, err = Open(s.Dir(), VerifyContents(), WithLogger(s.cfg.logger))
				if err != nil {
					t.Fatal(err)
				}
				tc.reason = "checksum mismatch"
			}
			c := wantLatest(t, s, 1)
			checkContents(t, c)
			wantContains(t, "log", logs.String(), "skipping unusable checkpoint", dir, tc.reason)
		})
	}
}

func TestAllCorrupt(t *testing.T) {
	s, logs := openStore(t)
	mustWrite(t, s, 1, 2, 3)
	var dirs []string
	for i, id := range []int64{1, 2, 3} {
		dirs = append(dirs, chkPath(s, id))
		breakBoth(t, chkPath(s, id), corruptions[i+1].name, corruptions[i+1].break_)
	}
	_, err := s.Latest()
	if !errors.Is(err, ErrNoValidCheckpoint) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Latest: %v, want ErrNoValidCheckpoint", err)
	}
	var nv *NoValidCheckpointError
	if !errors.As(err, &nv) || len(nv.Rejected) != 3 || nv.Rejected[0].Path != dirs[2] {
		t.Fatalf("rejections: %+v", nv)
	}
	msg := err.Error()
	wantContains(t, "error", msg, append(dirs, "3 rejected", "checksum mismatch", "no crc32c checksum line")...)
	t.Logf("the error reads:\n%s", msg)
	wantContains(t, "log", logs.String(), dirs...)
}

func TestLeftoverInProgress(t *testing.T) {
	s, logs := openStore(t)
	mustWrite(t, s, 1, 2)
	// A crash after _metadata was renamed but before the directory was:
	// complete-looking, but never committed.
	leftover := chkPath(s, 3) + inProgressSuffix
	if err := os.CopyFS(leftover, os.DirFS(chkPath(s, 2))); err != nil {
		t.Fatal(err)
	}
	rewriteMetadata(t, leftover, func(body string) string {
		return strings.Replace(body, `"checkpoint_id": 2`, `"checkpoint_id": 3`, 1)
	})
	wantLatest(t, s, 2)
	if _, err := OpenPath(leftover); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("OpenPath of an in-progress directory: %v", err)
	}

	s2, err := Open(s.Dir(), WithLogger(s.cfg.logger))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("leftover still there: %v", err)
	}
	wantContains(t, "log", logs.String(), "removing in-progress checkpoint left by a crash", leftover)
	wantLatest(t, s2, 2)
	mustWrite(t, s2, 3)
}

func TestCorruptErrors(t *testing.T) {
	s, _ := openStore(t)
	c, err := writeCheckpoint(s, 1, KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	// Streaming: the error comes at the end, in place of io.EOF.
	path := filepath.Join(c.Path(), "window.0")
	flipBit(t, path, 5)
	r, err := c.Open("window.0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 4096)
	var n int
	for {
		m, err := r.Read(buf)
		n += m
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != path || n != len(content(1, 0)) {
				t.Fatalf("after %d bytes: %v", n, err)
			}
			break
		}
	}
	if _, err := r.Read(buf); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("the error is not sticky: %v", err)
	}
	// Every problem, joined.
	os.Remove(filepath.Join(c.Path(), "window.2"))
	err = c.Verify()
	wantContains(t, "Verify", fmt.Sprint(err), "window.0: checksum mismatch", "window.2: missing")
}
