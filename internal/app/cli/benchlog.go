package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	wlog "github.com/weirstream/weir/connector/log"
)

// logBenchResult is one line of `weir bench log --json`.
type logBenchResult struct {
	Mode          string  `json:"mode"`
	Records       int     `json:"records"`
	RecordBytes   int     `json:"record_bytes"`
	AppendPerSec  float64 `json:"append_records_per_sec"`
	AppendMBPerS  float64 `json:"append_mb_per_sec"`
	ReadPerSec    float64 `json:"read_records_per_sec"`
	ReadMBPerSec  float64 `json:"read_mb_per_sec"`
	BatchRecords  int     `json:"batch_records"`
	FsyncPerBatch bool    `json:"fsync_per_batch"`
}

func newBenchLog() *cobra.Command {
	var (
		records, size, batch int
		dir                  string
		asJSON               bool
	)
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Append and read rates of the embedded log, with fsync per batch and without",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			for _, fsync := range []bool{false, true} {
				n := records
				if fsync {
					n = min(records, 200*batch) // fsync per batch is slow: keep the run short
				}
				r, err := benchLog(cmd.Context(), dir, n, size, batch, fsync)
				if err != nil {
					return err
				}
				if asJSON {
					b, _ := json.Marshal(r)
					fmt.Fprintln(out, string(b))
					continue
				}
				fmt.Fprintf(out, "%-22s %9d records of %d B in batches of %d: append %8.0f records/s (%6.1f MB/s), read %8.0f records/s (%6.1f MB/s)\n",
					r.Mode, r.Records, r.RecordBytes, r.BatchRecords, r.AppendPerSec, r.AppendMBPerS, r.ReadPerSec, r.ReadMBPerSec)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&records, "records", 2_000_000, "records to append and read")
	f.IntVar(&size, "record-bytes", 100, "value size of each record")
	f.IntVar(&batch, "batch", 1000, "records per append")
	f.StringVar(&dir, "dir", "", "directory for the benchmark's topic (default: a temporary one)")
	f.BoolVar(&asJSON, "json", false, "one JSON object per mode")
	return cmd
}

func benchLog(ctx context.Context, dir string, n, size, batch int, fsync bool) (logBenchResult, error) {
	res := logBenchResult{Mode: "no fsync", Records: n, RecordBytes: size, BatchRecords: batch, FsyncPerBatch: fsync}
	if fsync {
		res.Mode = "fsync per batch"
	}
	tmp, err := os.MkdirTemp(dir, "weir-bench-log-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	t, err := wlog.CreateTopic(tmp, "bench", wlog.TopicConfig{Partitions: 1})
	if err != nil {
		return res, err
	}
	policy := wlog.SyncNever()
	if fsync {
		policy = wlog.SyncEveryBatch()
	}
	w, err := t.OpenWriter(0, wlog.WithSync(policy))
	if err != nil {
		return res, err
	}
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	recs := make([]wlog.Record, batch)
	start := time.Now()
	for done := 0; done < n; {
		k := min(batch, n-done)
		for i := range recs[:k] {
			recs[i] = wlog.Record{Timestamp: int64(done + i), Value: value}
		}
		if _, err := w.Append(recs[:k]); err != nil {
			w.Close()
			return res, err
		}
		done += k
	}
	if err := w.Close(); err != nil {
		return res, err
	}
	el := time.Since(start).Seconds()
	res.AppendPerSec = float64(n) / el
	res.AppendMBPerS = float64(n*size) / el / 1e6
	r, err := t.OpenReader(0, wlog.Earliest())
	if err != nil {
		return res, err
	}
	defer r.Close()
	start = time.Now()
	got := 0
	for got < n {
		rs, err := r.Read(ctx, batch)
		got += len(rs)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, err
		}
	}
	el = time.Since(start).Seconds()
	if got != n {
		return res, fmt.Errorf("read %d records back, appended %d", got, n)
	}
	res.ReadPerSec = float64(n) / el
	res.ReadMBPerSec = float64(n*size) / el / 1e6
	return res, nil
}
