package wlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readAllErr reads partition 0 from start to the end, returning the
// records read and the error that stopped it (nil at the end).
func readAllErr(tp *Topic, start StartAt) ([]Record, error) {
	r, err := tp.OpenReader(0, start)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var all []Record
	for {
		recs, err := r.Read(context.Background(), 500)
		all = append(all, recs...)
		if err == io.EOF {
			return all, nil
		}
		if err != nil {
			return all, err
		}
	}
}

// checkNames fails unless err is a damage error (ErrCorrupt) that names
// topic t, partition 0 and each of names.
func checkNames(t *testing.T, what string, err error, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: %v (%T), want a damage error", what, err, err)
	}
	for _, s := range append([]string{"topic t", "partition 0"}, names...) {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%s: %q does not name %q", what, err, s)
		}
	}
}

// Issue 35, item 1: the second segment's .log deleted or emptied is an
// error for readers, the writer and Describe, not 75% of the records.
func TestMissingSegment(t *testing.T) {
	for _, damage := range []string{"delete", "truncate-to-0"} {
		t.Run(damage, func(t *testing.T) {
			tp := newTopic(t, TopicConfig{SegmentBytes: 1 << 20})
			w := openWriter(t, tp, WithSync(SyncEvery(time.Hour)))
			const n = 100_000
			for i := 0; i < n; i += 1000 {
				recs := make([]Record, 1000)
				for j := range recs {
					recs[j] = Record{Timestamp: int64(1000 + i + j), Value: fmt.Appendf(nil, "line %d of the reproduction", i+j)}
				}
				if _, err := w.Append(recs); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			dir := tp.partDir(0)
			bases, _ := listSegments(dir)
			if len(bases) < 3 {
				t.Fatalf("segments %v: want at least 3", bases)
			}
			second := logPath(dir, bases[1])
			if damage == "delete" {
				err := os.Remove(second)
				if err != nil {
					t.Fatal(err)
				}
			} else if err := os.Truncate(second, 0); err != nil {
				t.Fatal(err)
			}
			missing := fmt.Sprintf("offsets %d to %d are missing", bases[1], bases[2]-1)
			got, err := readAllErr(tp, Earliest())
			checkNames(t, "read from the start", err, second, missing)
			if len(got) != int(bases[1]) {
				t.Fatalf("read %d records before the error, want %d", len(got), bases[1])
			}
			got, err = readAllErr(tp, AtOffset(bases[1]+5))
			checkNames(t, "read from inside the hole", err, second, missing)
			if len(got) != 0 {
				t.Fatalf("read %v from inside the hole", offsets(got)[:1])
			}
			_, err = readAllErr(tp, AtTimestamp(1000+bases[1]+5))
			checkNames(t, "seek by time into the hole", err, second)
			_, err = tp.OpenWriter(0, WithLogger(quietLogger()))
			checkNames(t, "OpenWriter", err, second, missing)
			_, err = tp.Describe()
			checkNames(t, "Describe", err, second, missing)
			// The log source of a job reads through a Reader: the same error.
		})
	}
}

// Issue 35, item 2: a bit flipped in the last batch of the active segment
// after it was fsynced is corruption, not a torn tail: readers fail, the
// writer refuses to open and leaves the file as it is.
func TestBitFlipBelowRecoveryPoint(t *testing.T) {
	tp := newTopic(t, TopicConfig{})
	w := openWriter(t, tp, WithSync(SyncEvery(time.Hour)))
	for i := 0; i < 100_000; i += 1000 {
		recs := make([]Record, 1000)
		for j := range recs {
			recs[j] = Record{Timestamp: 1, Value: fmt.Appendf(nil, "line %d", i+j)}
		}
		if _, err := w.Append(recs); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil { // fsyncs: the records are acknowledged
		t.Fatal(err)
	}
	path := logPath(tp.partDir(0), 0)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-100] ^= 0x04
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readAllErr(tp, Earliest())
	checkNames(t, "read", err, path, "offset 99000", "recovery point")
	if len(got) != 99_000 {
		t.Fatalf("read %d records before the error", len(got))
	}
	_, err = tp.OpenWriter(0, WithLogger(quietLogger()))
	checkNames(t, "OpenWriter", err, path, "offset 99000", "recovery point")
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Fatalf("OpenWriter changed the segment: %d bytes, was %d", len(after), len(b))
	}
	_, err = tp.Describe()
	checkNames(t, "Describe", err, path)
}

// damageSeeds are the seeds of TestRandomDamage.
var damageSeeds = func() []uint64 {
	s := make([]uint64, 300)
	for i := range s {
		s[i] = uint64(i + 1)
	}
	return s
}()

// TestRandomDamage writes records, damages a random byte range of a
// random segment or index file (deleted, truncated, flipped or zeroed),
// with or without the writer open, and reads everything: the result is
// exactly the records written, or an error naming the damaged segment,
// never fewer records without an error. A writer opened afterwards either
// fails the same way or continues after the last record.
func TestRandomDamage(t *testing.T) {
	for _, seed := range damageSeeds {
		desc, err := damageOnce(t, seed)
		if err != nil {
			t.Fatalf("seed %d (%s): %v", seed, desc, err)
		}
	}
}

func damageOnce(t *testing.T, seed uint64) (desc string, _ error) {
	rnd := rand.New(rand.NewPCG(seed, 35))
	krnd := rand.New(rand.NewPCG(seed, 41))
	tp := newTopic(t, TopicConfig{SegmentBytes: 8 << 10})
	w := openWriter(t, tp, WithSync(SyncEvery(time.Hour)), WithLogger(quietLogger()))
	n := 200 + rnd.IntN(400)
	var want []Record
	for len(want) < n {
		recs := make([]Record, 1+rnd.IntN(20))
		for i := range recs {
			recs[i] = Record{Timestamp: int64(1000 + len(want) + i), Key: fmt.Appendf(nil, "k%d", rnd.IntN(50)),
				Value: bytes.Repeat([]byte{byte('a' + rnd.IntN(26))}, rnd.IntN(120))}
		}
		// A third of the batches in Kafka's form (kafka.go), chosen by a
		// generator of their own (the damage of a seed is as before).
		var err error
		if krnd.IntN(3) == 0 {
			_, err = w.AppendKafka(kafkaBatch(recs), "", ProducerSeq{})
		} else {
			_, err = w.Append(recs)
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, recs...)
	}
	n = len(want)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	writerOpen := rnd.IntN(2) == 0
	if !writerOpen {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := tp.partDir(0)
	var files []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), logSuffix) || strings.HasSuffix(e.Name(), indexSuffix) {
			files = append(files, e.Name())
		}
	}
	name := files[rnd.IntN(len(files))]
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kind := []string{"delete", "truncate", "flip", "zero"}[rnd.IntN(4)]
	from, to := 0, 0
	if len(b) > 0 {
		from = rnd.IntN(len(b))
		to = from + 1 + rnd.IntN(min(len(b)-from, 64))
	}
	desc = fmt.Sprintf("%d records, writer open %v, %s %s bytes [%d, %d) of %d", n, writerOpen, kind, name, from, to, len(b))
	switch kind {
	case "delete":
		err = os.Remove(path)
	case "truncate":
		err = os.Truncate(path, int64(from))
	default:
		for i := from; i < to; i++ {
			if kind == "zero" {
				b[i] = 0
			} else {
				b[i] ^= byte(1 + rnd.IntN(255))
			}
		}
		err = overwrite(path, b)
	}
	if err != nil {
		t.Fatal(err)
	}
	segment := strings.TrimSuffix(strings.TrimSuffix(name, indexSuffix), logSuffix) + logSuffix
	check := func(stage string, got []Record, err error) error {
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "topic t partition 0") || !strings.Contains(err.Error(), segment) {
				return fmt.Errorf("%s: %d records, then an error that does not name the damage (%s): %v", stage, len(got), segment, err)
			}
			return nil
		}
		if len(got) != len(want) {
			return fmt.Errorf("%s: %d records without an error, want %d", stage, len(got), len(want))
		}
		for i := range got {
			if got[i].Offset != int64(i) || !bytes.Equal(got[i].Value, want[i].Value) || !bytes.Equal(got[i].Key, want[i].Key) {
				return fmt.Errorf("%s: record %d is %d %q, want %q", stage, i, got[i].Offset, got[i].Value, want[i].Value)
			}
		}
		return nil
	}
	got, err := readAllErr(tp, Earliest())
	if err := check("read", got, err); err != nil {
		return desc, err
	}
	at := int64(rnd.IntN(n))
	got, err = readAllErr(tp, AtOffset(at))
	if err == nil && (len(got) != n-int(at) || got[0].Offset != at) {
		return desc, fmt.Errorf("read from %d: %d records without an error, want %d", at, len(got), n-int(at))
	}
	if err != nil {
		if err := check(fmt.Sprintf("read from %d", at), got, err); err != nil {
			return desc, err
		}
	}
	if writerOpen {
		w.Close()
	}
	w2, werr := tp.OpenWriter(0, WithLogger(quietLogger()))
	if werr != nil {
		return desc, check("OpenWriter", nil, werr)
	}
	next := w2.NextOffset()
	w2.Close()
	if next != int64(n) {
		return desc, fmt.Errorf("OpenWriter: next offset %d, want %d", next, n)
	}
	got, err = readAllErr(tp, Earliest())
	return desc, check("read after OpenWriter", got, err)
}

// overwrite writes b over the file at path in place (the same inode, as a
// stray write or a bad sector would).
func overwrite(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
