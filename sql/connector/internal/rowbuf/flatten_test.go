package rowbuf

import (
	"context"
	"io"
	"testing"

	"github.com/weirstream/weir/sql/types"
)

// records is a checkpointed reader of records that decode to one or two
// rows each (as debezium-json's inserts and updates do).
type records struct {
	recs []Decoded
	pos  int
}

func (r *records) Read(_ context.Context, dst []Decoded) (int, error) {
	if r.pos == len(r.recs) {
		return 0, io.EOF
	}
	k := copy(dst, r.recs[r.pos:])
	r.pos += k
	return k, nil
}

func (r *records) Position() ([]byte, error) { return []byte{byte(r.pos)}, nil }
func (r *records) Close() error              { return nil }

// TestFlattenLeavesNoRowOver: whatever room a Read has, it returns with no
// row of a record left over (when the room holds a whole record), so the
// inner reader's position after the records read is a consistent commit
// point — group mode commits that Kafka offset. With a batch of 5 and
// records of two rows, reading one more record into the last slot would
// leave its second row over (the behaviour before).
func TestFlattenLeavesNoRowOver(t *testing.T) {
	var src records
	want := 0
	for i := range 101 {
		rows := []types.Row{{}}
		if i%3 != 0 {
			rows = append(rows, types.Row{})
		}
		want += len(rows)
		src.recs = append(src.recs, Decoded{Rows: rows})
	}
	fr, err := newFlatReader(&src)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{5, 2, 7, 3} {
		src.pos, fr.eof, fr.pending, fr.next = 0, false, nil, 0
		got := 0
		dst := make([]types.Row, size)
		for {
			n, err := fr.Read(context.Background(), dst)
			got += n
			if left := len(fr.pending) - fr.next; left > 0 {
				t.Fatalf("batch of %d: a Read returned %d rows with %d of a record left over", size, n, left)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if got != want {
			t.Fatalf("batch of %d: %d rows, want %d", size, got, want)
		}
	}
}
