package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
)

type benchRow struct {
	ID, V int64
	S     string
}

func decodeBench(r *postgres.Record) (benchRow, error) {
	var b benchRow
	if err := r.Scan(0, &b.ID); err != nil {
		return b, err
	}
	if err := r.Scan(1, &b.V); err != nil {
		return b, err
	}
	b.S = r.String(2)
	return b, nil
}

// BenchmarkCDC reads rows through the source's reader with a typed
// decoder: the snapshot of a table of 100k rows, then 100k inserted rows
// from the WAL (one transaction per 10k), and prints both rates.
//
//	go test -run '^$' -bench BenchmarkCDC -benchtime 1x ./connector/postgres/
func BenchmarkCDC(b *testing.B) {
	const n = 100_000
	conn := connect(b)
	ctx := context.Background()
	for range b.N {
		tbl := table(b, conn, "(id bigint PRIMARY KEY, v bigint, s text)")
		sqlExec(b, conn, "INSERT INTO "+tbl+" SELECT g, g * 2, 'row ' || g FROM generate_series(1, $1) g", n)
		src := postgres.CDC(cdcConfig(b, tbl), decodeBench)
		splits, _ := src.Splits(ctx)
		start := time.Now()
		r, err := src.Open(ctx, splits[0])
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]weir.Change[benchRow], 1024)
		read := func(want int) time.Duration {
			t0 := time.Now()
			for got := 0; got < want; {
				k, err := r.Read(ctx, dst)
				if err != nil {
					b.Fatal(err)
				}
				got += k
			}
			return time.Since(t0)
		}
		snap := read(n)
		snapAll := time.Since(start)
		for i := 0; i < n; i += 10_000 {
			sqlExec(b, conn, "INSERT INTO "+tbl+" SELECT g, g, 'wal ' || g FROM generate_series($1::bigint, $2::bigint) g", n+i+1, n+i+10_000)
		}
		wal := read(n)
		r.Close()
		b.ReportMetric(float64(n)/snap.Seconds(), "snapshot-rows/s")
		b.ReportMetric(float64(n)/wal.Seconds(), "wal-rows/s")
		fmt.Printf("CDC: snapshot %d rows in %v (%.0f rows/s; with slot creation %v), WAL %d rows in %v (%.0f rows/s)\n",
			n, snap.Round(time.Millisecond), float64(n)/snap.Seconds(), snapAll.Round(time.Millisecond), n, wal.Round(time.Millisecond), float64(n)/wal.Seconds())
	}
}
