package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/weirstream/weir/connector/postgres"
)

// The benchmarks write b.N rows of 10,000 keys through one writer, a
// checkpoint (PreCommit, and Commit for Transactional) every 10,000 rows,
// and report rows/s.
func BenchmarkUpsert(b *testing.B) {
	conn := connect(b)
	tbl := table(b, conn, "(k text PRIMARY KEY, v bigint, weir_position bigint NOT NULL)")
	s := postgres.Upsert(dsn(b), postgres.Table{Name: tbl, Key: []string{"k"}, Columns: []string{"v"}}, recRow)
	w, err := s.OpenWriter(context.Background(), 0, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(context.Background())
	benchWrite(b, flushAsPreCommit{w.(flushingWriter)}, nil)
}

func BenchmarkTransactional(b *testing.B) {
	conn := connect(b)
	tbl := table(b, conn, "(k text, v bigint)")
	s := postgres.Transactional(dsn(b), postgres.Table{Name: tbl, Columns: []string{"k", "v"}}, kv)
	w, err := s.OpenWriter(context.Background(), 0, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(context.Background())
	benchWrite(b, w.(interface {
		Write(context.Context, []rec) error
		PreCommit(context.Context, int64) ([]byte, error)
	}), func(c []byte) error { return s.Committer().Commit(context.Background(), c) })
}

func benchWrite(b *testing.B, w interface {
	Write(context.Context, []rec) error
	PreCommit(context.Context, int64) ([]byte, error)
}, commit func([]byte) error) {
	ctx := context.Background()
	batch := make([]rec, 1000)
	ck := int64(0)
	checkpoint := func() {
		ck++
		c, err := w.PreCommit(ctx, ck)
		if err != nil {
			b.Fatal(err)
		}
		if c != nil && commit != nil {
			if err := commit(c); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += len(batch) {
		n := min(len(batch), b.N-i)
		for j := range n {
			batch[j] = rec{K: fmt.Sprintf("k%d", (i+j)%10000), V: int64(i + j), Pos: int64(i + j)}
		}
		if err := w.Write(ctx, batch[:n]); err != nil {
			b.Fatal(err)
		}
		if (i+n)%10000 == 0 {
			checkpoint()
		}
	}
	checkpoint()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// flushAsPreCommit lets benchWrite checkpoint a flushing writer.
type flushAsPreCommit struct{ flushingWriter }

func (f flushAsPreCommit) PreCommit(ctx context.Context, id int64) ([]byte, error) {
	return nil, f.Flush(ctx, id)
}
