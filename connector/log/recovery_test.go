package wlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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

// Truncating or garbling the tail of the last segment past the recovery
// point (the last batch was never fsynced, or the partition has no
// recovery point, as written by older versions) loses exactly the damaged
// batches: readers do not serve them, and a writer opening the partition
// truncates them and carries on from the last whole batch.
func TestTornTailRecovery(t *testing.T) {
	const batches, per = 20, 5
	for _, mode := range []string{"unsynced", "no-recovery-point"} {
		for _, damage := range []string{"cut1", "cut-half", "cut-header", "garble-last", "zeros-appended", "garble-length"} {
			t.Run(mode+"/"+damage, func(t *testing.T) { tornTailOnce(t, mode, damage, batches, per) })
		}
	}
}

func tornTailOnce(t *testing.T, mode, damage string, batches, per int) {
	{
		{
			tp := newTopic(t, TopicConfig{})
			w := openWriter(t, tp)
			appendN(t, w, 0, (batches-1)*per, per)
			w.Close()
			w = openWriter(t, tp, WithSync(SyncNever()))
			appendN(t, w, (batches-1)*per, per, per)
			w.Close()
			if mode == "no-recovery-point" {
				if err := os.Remove(filepath.Join(tp.partDir(0), recoveryFile)); err != nil {
					t.Fatal(err)
				}
			}
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
			if !strings.Contains(logs.String(), "truncating torn tail") {
				t.Errorf("recovery not logged: %q", logs.String())
			}
			check("after recovery")
			if w.NextOffset() != int64(wantRecs) {
				t.Fatalf("next offset %d, want %d", w.NextOffset(), wantRecs)
			}
			appendN(t, w, wantRecs, 3, 3)
			wantRecs += 3
			check("after append")
		}
	}
}

// A torn tail at an index entry: the index must not lead a reader or the
// writer past the truncation.
func TestTornTailWithIndex(t *testing.T) {
	tp := newTopic(t, TopicConfig{})
	w := openWriter(t, tp, WithSync(SyncNever())) // no recovery point
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

// corruptMidSegment writes n records in batches of per into a new topic
// and damages the segment at byte at, as damage says; it returns the
// topic, the segment's path and its bytes after the damage.
func corruptMidSegment(t *testing.T, n, per int, at int, damage string) (*Topic, string, []byte) {
	t.Helper()
	tp := newTopic(t, TopicConfig{})
	w := openWriter(t, tp)
	appendN(t, w, 0, n, per)
	w.Close()
	path := logPath(tp.partDir(0), 0)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The batch boundary at or after byte at.
	start := 0
	for start < at {
		h, err := checkBatch(b[start:])
		if err != nil {
			t.Fatal(err)
		}
		start += int(h.size())
	}
	switch damage {
	case "random16": // the case: 16 random bytes at byte at
		rnd := rand.New(rand.NewPCG(1, 2))
		for i := range 16 {
			b[at+i] = byte(rnd.Uint32())
		}
	case "flip": // one bit inside a record
		b[at] ^= 0x10
	case "zero-header": // a whole batch header zeroed
		clear(b[start : start+batchHeaderSize])
	case "long-length": // a length that runs past the end of the file
		binary.BigEndian.PutUint32(b[start:], uint32(len(b)))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return tp, path, b
}

// Damage in the middle of the active segment is not a torn tail: readers
// return the records before it and then a *CorruptError naming topic,
// partition, segment and offset; a writer refuses to open and leaves the
// file as it is.
func TestCorruptionMidSegment(t *testing.T) {
	for _, damage := range []string{"random16", "flip", "zero-header", "long-length"} {
		t.Run(damage, func(t *testing.T) {
			tp, path, damaged := corruptMidSegment(t, 1000, 10, 5000, damage)
			r, err := tp.OpenReader(0, Earliest())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got []Record
			for {
				recs, err := r.Read(context.Background(), 7)
				got = append(got, recs...)
				if err == nil {
					continue
				}
				if err == io.EOF {
					t.Fatalf("read %d records and EOF: damage taken for the end of the log", len(got))
				}
				var ce *CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v (%T), want a *CorruptError", err, err)
				}
				if ce.Topic != "t" || ce.Partition != 0 || ce.Segment != path || ce.Offset != int64(len(got)) || ce.Position > 5200 || ce.NextPosition <= 5000 || ce.NextOffset <= ce.Offset {
					t.Fatalf("error %+v after %d records", ce, len(got))
				}
				for _, want := range []string{"topic t", "partition 0", path, fmt.Sprintf("offset %d", len(got))} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%q does not say %q", err, want)
					}
				}
				// Reading again gives the same error, not the records after it.
				if recs, err2 := r.Read(context.Background(), 7); len(recs) != 0 || !errors.As(err2, &ce) {
					t.Fatalf("second read: %d records, %v", len(recs), err2)
				}
				break
			}
			if len(got) == 0 || len(got) > 5000/10 {
				t.Fatalf("read %d records before the damage", len(got))
			}
			for i, rec := range got {
				if rec.Offset != int64(i) {
					t.Fatalf("record %d has offset %d", i, rec.Offset)
				}
			}
			// Seeking by time across the damage (from the index entry
			// before it) fails too.
			if r2, err := tp.OpenReader(0, AtTimestamp(1000+int64(len(got))+30)); err == nil {
				r2.Close()
				t.Errorf("seek by time across the damage succeeded")
			} else if !errors.Is(err, ErrCorrupt) {
				t.Errorf("seek by time: %v", err)
			}
			_, err = tp.OpenWriter(0, WithLogger(quietLogger()))
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("OpenWriter: %v, want a *CorruptError", err)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, damaged) {
				t.Fatalf("OpenWriter changed the damaged segment (%d bytes, was %d)", len(b), len(damaged))
			}
		})
	}
}

// FuzzSegment treats arbitrary bytes as the active segment of a partition.
// Readers never fail otherwise than with a *CorruptError, return records
// in increasing offsets, and agree with the writer: when the writer opens
// (truncating a torn tail), a reader returns the same records as before
// and ends cleanly; when the reader saw damage, the writer refuses to open.
func FuzzSegment(f *testing.F) {
	var seg []byte
	for i := range 6 {
		seg = appendBatch(seg, []Record{rec(2*i, 3), rec(2*i+1, 3)})
	}
	f.Add(append([]byte(nil), seg...))
	f.Add(append([]byte(nil), seg[:len(seg)-5]...))
	damaged := append([]byte(nil), seg...)
	damaged[60] ^= 0xff
	f.Add(damaged)
	zeroed := append([]byte(nil), seg...)
	clear(zeroed[:batchHeaderSize])
	f.Add(zeroed)
	f.Add(append(append([]byte(nil), seg...), make([]byte, 100)...))
	f.Add([]byte{})
	// One topic for all inputs (creating one per input costs fsyncs): each
	// input replaces its segment with a new file.
	tp, err := CreateTopic(f.TempDir(), "t", TopicConfig{Partitions: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzSegmentOnce(t, tp, data) })
}

func fuzzSegmentOnce(t *testing.T, tp *Topic, data []byte) {
	{
		os.Remove(indexPath(tp.partDir(0), 0))
		os.Remove(logPath(tp.partDir(0), 0))
		if err := os.WriteFile(logPath(tp.partDir(0), 0), data, 0o644); err != nil {
			t.Fatal(err)
		}
		read := func() ([]Record, error) {
			r, err := tp.OpenReader(0, Earliest())
			if err != nil {
				return nil, err
			}
			defer r.Close()
			var all []Record
			for {
				recs, err := r.Read(context.Background(), 5)
				for _, rec := range recs {
					if n := len(all); n > 0 && rec.Offset <= all[n-1].Offset {
						t.Fatalf("offset %d after %d", rec.Offset, all[n-1].Offset)
					}
					all = append(all, rec)
				}
				if err == io.EOF {
					return all, nil
				}
				if err != nil {
					var ce *CorruptError
					if !errors.As(err, &ce) {
						t.Fatalf("read: %v (%T), want EOF or a *CorruptError", err, err)
					}
					return all, err
				}
			}
		}
		before, rerr := read()
		w, werr := tp.OpenWriter(0, WithLogger(quietLogger()))
		if werr != nil {
			var ce *CorruptError
			if !errors.As(werr, &ce) {
				t.Fatalf("OpenWriter: %v", werr)
			}
			return
		}
		w.Close()
		if rerr != nil && !strings.Contains(rerr.Error(), "does not match its header") && !strings.Contains(rerr.Error(), "malformed record") && !strings.Contains(rerr.Error(), "flags") && !strings.Contains(rerr.Error(), "producer section") {
			t.Fatalf("the reader saw damage (%v) that the writer accepted", rerr)
		}
		after, err := read()
		if err != nil && rerr == nil {
			t.Fatalf("after the writer opened: %v", err)
		}
		if rerr == nil && fmt.Sprint(offsets(after)) != fmt.Sprint(offsets(before)) {
			t.Fatalf("records before the writer opened %v, after %v", offsets(before), offsets(after))
		}
	}
}
