package wlog

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendBatch(nil, []Record{{Offset: 3, Timestamp: 7, Key: []byte("k"), Value: []byte("v"), Headers: []Header{{Key: "h"}}}}))
	f.Add(appendBatch(nil, []Record{{Offset: 0, Value: nil}, {Offset: 5, Key: []byte{}, Value: []byte{}}}))
	f.Add([]byte{})
	f.Add(make([]byte, batchHeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, h, err := decodeBatch(nil, b)
		if err != nil {
			return
		}
		// A valid batch re-encodes to a batch that decodes the same.
		again, h2, err := decodeBatch(nil, appendBatch(nil, recs))
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		if h2.baseOffset != h.baseOffset || h2.lastOffset != h.lastOffset || len(again) != len(recs) {
			t.Fatalf("headers differ: %+v %+v", h, h2)
		}
		for i := range recs {
			if fmt.Sprint(recs[i]) != fmt.Sprint(again[i]) || (recs[i].Value == nil) != (again[i].Value == nil) {
				t.Fatalf("record %d: %+v != %+v", i, recs[i], again[i])
			}
		}
	})
}

// Truncating or garbling the tail of the last segment loses exactly the
// damaged batches: readers do not serve them, and a writer opening the
// partition truncates them and carries on from the last whole batch.
func TestTornTailRecovery(t *testing.T) {
	const batches, per = 20, 5
	for _, damage := range []string{"cut1", "cut-half", "cut-header", "garble-last", "zeros-appended", "garble-length"} {
		t.Run(damage, func(t *testing.T) {
			tp := newTopic(t, TopicConfig{})
			w := openWriter(t, tp)
			appendN(t, w, 0, batches*per, per)
			w.Close()
			path := logPath(tp.partDir(0), 0)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var lastBatch int
			for pos := 0; pos < len(b); pos += lastBatch {
				h, err := checkBatch(b[pos:])
				if err != nil {
					t.Fatal(err)
				}
				lastBatch = int(h.size())
			}
			wantRecs := (batches - 1) * per
			switch damage {
			case "cut1":
				b = b[:len(b)-1]
			case "cut-half":
				b = b[:len(b)-lastBatch/2]
			case "cut-header":
				b = b[:len(b)-lastBatch+10]
			case "garble-last":
				b[len(b)-3] ^= 0xff
			case "zeros-appended":
				b = append(b, make([]byte, 4096)...)
				wantRecs = batches * per
			case "garble-length":
				b[len(b)-lastBatch] = 0x7f
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			check := func(stage string) {
				got := readAll(t, tp, Earliest())
				if len(got) != wantRecs {
					t.Fatalf("%s: read %d records, want %d", stage, len(got), wantRecs)
				}
				for i, r := range got {
					if r.Offset != int64(i) || string(r.Value) != fmt.Sprint("v", i) {
						t.Fatalf("%s: record %d is %d %q", stage, i, r.Offset, r.Value)
					}
				}
			}
			check("before recovery")
			var logs bytes.Buffer
			w, err = tp.OpenWriter(0, WithLogger(slogTo(&logs)))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if !strings.Contains(logs.String(), "truncating torn or corrupt tail") {
				t.Errorf("recovery not logged: %q", logs.String())
			}
			check("after recovery")
			if w.NextOffset() != int64(wantRecs) {
				t.Fatalf("next offset %d, want %d", w.NextOffset(), wantRecs)
			}
			appendN(t, w, wantRecs, 3, 3)
			wantRecs += 3
			check("after append")
		})
	}
}

// A torn tail at an index entry: the index must not lead a reader or the
// writer past the truncation.
func TestTornTailWithIndex(t *testing.T) {
	tp := newTopic(t, TopicConfig{})
	w := openWriter(t, tp)
	for i := range 400 {
		r := rec(i, 10)
		r.Value = bytes.Repeat([]byte{'x'}, 100)
		if _, err := w.Append([]Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	dir := tp.partDir(0)
	ents, _ := readIndex(indexPath(dir, 0))
	if len(ents) < 5 {
		t.Fatalf("index has %d entries", len(ents))
	}
	// Cut the log in the middle of the batch the last index entry points at.
	cut := int64(ents[len(ents)-1].pos) + 20
	if err := os.Truncate(logPath(dir, 0), cut); err != nil {
		t.Fatal(err)
	}
	want := int(ents[len(ents)-1].rel)
	if got := readAll(t, tp, AtOffset(int64(want)-1)); len(got) != 1 {
		t.Fatalf("reader past the cut: %v", offsets(got))
	}
	w = openWriter(t, tp)
	if w.NextOffset() != int64(want) {
		t.Fatalf("next %d, want %d", w.NextOffset(), want)
	}
	appendN(t, w, want, 1, 1)
	if got := readAll(t, tp, Earliest()); len(got) != want+1 {
		t.Fatalf("read %d", len(got))
	}
	if got := readAll(t, tp, AtTimestamp(1000+int64(want))); len(got) != 1 || got[0].Offset != int64(want) {
		t.Fatalf("by time: %v", offsets(got))
	}
}

// TestKillHelper is the child of TestKill: it appends batches with an
// fsync per batch and prints each acknowledged offset, until killed.
func TestKillHelper(t *testing.T) {
	dir := os.Getenv("WLOG_KILL_DIR")
	if dir == "" {
		t.Skip("helper for TestKill")
	}
	tp, err := OpenTopic(dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	w, err := tp.OpenWriter(0, WithSync(SyncEveryBatch()), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := w.NextOffset(); ; i += 3 {
		recs := []Record{rec(int(i), 10), rec(int(i)+1, 10), rec(int(i)+2, 10)}
		first, err := w.Append(recs)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "ack %d\n", first+2)
		out.Flush()
	}
}

// TestKill SIGKILLs a writer in the middle of appending, several times;
// every record it acknowledged must be there after each restart.
func TestKill(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	tp, err := CreateTopic(dir, "t", TopicConfig{Partitions: 1, SegmentBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	acked := int64(-1)
	for round := range 5 {
		cmd := exec.Command(exe, "-test.run=^TestKillHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "WLOG_KILL_DIR="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		target := acked + 300 + int64(round)*97
		for sc.Scan() {
			if o, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
				acked, _ = strconv.ParseInt(o, 10, 64)
				if acked >= target {
					break
				}
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for sc.Scan() { // acks printed before the kill landed count too
			if o, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
				acked, _ = strconv.ParseInt(o, 10, 64)
			}
		}
		cmd.Wait()
		if acked < target {
			t.Fatalf("round %d: helper acked only %d: %s", round, acked, stderr.String())
		}
		got := readAll(t, tp, Earliest())
		if int64(len(got)) < acked+1 {
			t.Fatalf("round %d: %d records, acknowledged up to %d", round, len(got), acked)
		}
		for i, r := range got {
			if r.Offset != int64(i) || string(r.Value) != fmt.Sprint("v", i) {
				t.Fatalf("round %d: record %d is %d %q", round, i, r.Offset, r.Value)
			}
		}
	}
	if bases, _ := listSegments(filepath.Join(dir, "t", "0")); len(bases) < 2 {
		t.Errorf("no roll during the kill test: %v", bases)
	}
	_ = context.Background
	_ = time.Second
}
