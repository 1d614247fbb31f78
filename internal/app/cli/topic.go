package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/spf13/cobra"
	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/internal/datetime"
)

const defaultDataDir = "./weir-data"

// newTopicCommands returns the commands of the embedded log: topic (create,
// list, describe, delete), produce and consume.
func newTopicCommands() []*cobra.Command {
	cmds := []*cobra.Command{newTopic(), newProduce(), newConsume()}
	for _, c := range cmds {
		checkFlagsTree(c)
	}
	return cmds
}

func dataDirFlag(cmd *cobra.Command, dir *string) {
	cmd.PersistentFlags().StringVar(dir, "data-dir", defaultDataDir, "directory of the embedded log")
}

func newTopic() *cobra.Command {
	var dataDir string
	cmd := group("topic", "Create, list, describe and delete topics of the embedded log")
	dataDirFlag(cmd, &dataDir)

	var cfg wlog.TopicConfig
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := wlog.CreateTopicContext(cmd.Context(), dataDir, args[0], cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created topic %s with %d partitions\n", t.Name, t.Config.Partitions)
			return nil
		},
	}
	f := create.Flags()
	f.IntVar(&cfg.Partitions, "partitions", 1, fmt.Sprintf("number of partitions (1 to %d)", wlog.MaxPartitions))
	f.BoolVar(&cfg.Compact, "compact", false, "compacted topic: keep the latest record per key")
	f.DurationVar(&cfg.Retention, "retention", 0, "delete segments older than this (0: keep)")
	f.Int64Var(&cfg.RetentionBytes, "retention-bytes", 0, "keep about this many bytes per partition (0: no limit)")
	f.Int64Var(&cfg.SegmentBytes, "segment-bytes", 0, fmt.Sprintf("segment size, %d to %d (default 64 MiB)", wlog.MinSegmentBytes, wlog.MaxSegmentBytes))

	list := &cobra.Command{
		Use:   "list",
		Short: "List the topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names, err := wlog.ListTopics(dataDir)
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintln(cmd.OutOrStdout(), n)
			}
			return nil
		},
	}
	describe := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a topic's configuration and partitions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := wlog.OpenTopic(dataDir, args[0])
			if err != nil {
				return err
			}
			infos, err := t.Describe()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			c := t.Config
			fmt.Fprintf(out, "topic %s: partitions=%d compact=%t retention=%s retention-bytes=%d segment-bytes=%d tombstone-retention=%s\n",
				t.Name, c.Partitions, c.Compact, c.Retention, c.RetentionBytes, c.SegmentBytes, c.TombstoneRetention)
			for _, p := range infos {
				fmt.Fprintf(out, "partition %d: earliest=%d next=%d segments=%d bytes=%d\n",
					p.Partition, p.Earliest, p.Next, p.Segments, p.Bytes)
			}
			return nil
		},
	}
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic (refused while a partition has a writer)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wlog.DeleteTopic(dataDir, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted topic %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, describe, del)
	return cmd
}

// Limits of weir produce: a line longer than --max-record-bytes is an
// error, and a partition's pending records are appended once they reach
// produceBatchBytes, so a batch stays far below the log's limit (256 MiB)
// and memory stays bounded whatever the lines.
const (
	defaultMaxRecordBytes = 1 << 20
	maxMaxRecordBytes     = 64 << 20
	produceBatchBytes     = 16 << 20
)

func newProduce() *cobra.Command {
	var dataDir, key, keyField, ts string
	var partition, batch, maxRecord int
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Append one record per line of stdin to a topic",
		Long: `Appends one record per line of standard input (the line without its '\n' is
the value). The key is --key, or with --key-field the named field of the line
read as a JSON object. The partition is --partition, or a hash of the key, or
round robin for records without a key. The timestamp is --timestamp (RFC 3339
or milliseconds since the epoch), or the time of appending. Records are
fsynced in batches of --batch lines (or 16 MiB) and at the end of input.
A line longer than --max-record-bytes, or a bad --key-field, is an error that
names its line; the lines before it are appended.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := wlog.OpenTopic(dataDir, args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("partition") && (partition < 0 || partition >= t.Config.Partitions) {
				return fmt.Errorf("--partition %d: topic %s has partitions 0 to %d", partition, t.Name, t.Config.Partitions-1)
			}
			if maxRecord < 1 || maxRecord > maxMaxRecordBytes {
				return fmt.Errorf("--max-record-bytes %d: want 1 to %d", maxRecord, maxMaxRecordBytes)
			}
			var stamp int64
			if ts != "" {
				if stamp, err = parseTime(ts); err != nil {
					return fmt.Errorf("--timestamp: %w", err)
				}
			}
			p := &producer{topic: t, writers: map[int]*wlog.Writer{}, pending: map[int][]wlog.Record{},
				pendingBytes: map[int]int{}, batch: max(batch, 1)}
			defer p.close()
			sc := bufio.NewScanner(cmd.InOrStdin())
			// Room for the longest allowed line and its "\r\n": a longer one
			// stops the scanner (bufio.ErrTooLong) before it is buffered whole.
			sc.Buffer(make([]byte, min(64<<10, maxRecord+2)), maxRecord+2)
			line, rr := 0, 0
			// fail appends the good lines read before the error, so that
			// none is lost, and names the bad line.
			fail := func(err error) error {
				if ferr := p.flushAll(); ferr != nil {
					return errors.Join(err, ferr)
				}
				if cerr := p.close(); cerr != nil {
					return errors.Join(err, cerr)
				}
				return fmt.Errorf("%w (the %d lines before it were appended)", err, line-1)
			}
			for sc.Scan() {
				line++
				if len(sc.Bytes()) > maxRecord {
					return fail(fmt.Errorf("line %d: %d bytes, longer than --max-record-bytes %d", line, len(sc.Bytes()), maxRecord))
				}
				r := wlog.Record{Timestamp: stamp, Value: append([]byte(nil), sc.Bytes()...)}
				switch {
				case keyField != "":
					k, err := jsonField(sc.Bytes(), keyField)
					if err != nil {
						return fail(fmt.Errorf("line %d: %w", line, err))
					}
					r.Key = k
				case key != "":
					r.Key = []byte(key)
				}
				part := partition
				if part < 0 {
					if r.Key != nil {
						part = int(xxhash.Sum64(r.Key) % uint64(t.Config.Partitions))
					} else {
						part = rr % t.Config.Partitions
						rr++
					}
				}
				if err := p.add(part, r); err != nil {
					return err
				}
			}
			if err := sc.Err(); err != nil {
				line++
				if errors.Is(err, bufio.ErrTooLong) {
					return fail(fmt.Errorf("line %d: longer than --max-record-bytes %d", line, maxRecord))
				}
				return fail(fmt.Errorf("line %d: %w", line, err))
			}
			if err := p.flushAll(); err != nil {
				return err
			}
			return p.close()
		},
	}
	dataDirFlag(cmd, &dataDir)
	f := cmd.Flags()
	f.StringVar(&key, "key", "", "key of every record")
	f.StringVar(&keyField, "key-field", "", "take the key from this field of each line, a JSON object")
	f.StringVar(&ts, "timestamp", "", "timestamp of every record: RFC 3339 or milliseconds (default: now)")
	f.IntVar(&partition, "partition", -1, "partition to append to (default: by key hash, or round robin)")
	f.IntVar(&batch, "batch", 1000, "lines per appended batch")
	f.IntVar(&maxRecord, "max-record-bytes", defaultMaxRecordBytes, fmt.Sprintf("longest line accepted, in bytes (at most %d)", maxMaxRecordBytes))
	cmd.MarkFlagsMutuallyExclusive("key", "key-field")
	return cmd
}

// producer opens partition writers on demand and batches records.
type producer struct {
	topic        *wlog.Topic
	writers      map[int]*wlog.Writer
	pending      map[int][]wlog.Record
	pendingBytes map[int]int
	batch        int
}

func (p *producer) add(part int, r wlog.Record) error {
	p.pending[part] = append(p.pending[part], r)
	p.pendingBytes[part] += len(r.Key) + len(r.Value)
	if len(p.pending[part]) >= p.batch || p.pendingBytes[part] >= produceBatchBytes {
		return p.flush(part)
	}
	return nil
}

func (p *producer) flush(part int) error {
	recs := p.pending[part]
	if len(recs) == 0 {
		return nil
	}
	w := p.writers[part]
	if w == nil {
		var err error
		if w, err = p.topic.OpenWriter(part); err != nil {
			return err
		}
		p.writers[part] = w
	}
	if _, err := w.Append(recs); err != nil {
		return err
	}
	clear(recs) // let the values go
	p.pending[part] = recs[:0]
	p.pendingBytes[part] = 0
	return nil
}

func (p *producer) flushAll() error {
	for part := range p.topic.Config.Partitions {
		if err := p.flush(part); err != nil {
			return err
		}
	}
	return nil
}

func (p *producer) close() error {
	var errs []error
	for part, w := range p.writers {
		errs = append(errs, w.Close())
		delete(p.writers, part)
	}
	return errors.Join(errs...)
}

func jsonField(line []byte, field string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return nil, fmt.Errorf("--key-field: not a JSON object: %w", err)
	}
	raw, ok := obj[field]
	if !ok {
		return nil, fmt.Errorf("--key-field: no field %q", field)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s), nil
	}
	return []byte(raw), nil // a number or other JSON value: its text
}

// parseTime reads RFC 3339 or milliseconds since the epoch.
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	ms, err := parseRFC3339(s)
	if err != nil {
		return 0, fmt.Errorf("neither milliseconds since the epoch nor an RFC 3339 time: %w", err)
	}
	return ms, nil
}

// parseRFC3339 reads an RFC 3339 time ('2025-01-01T00:00:00Z', the forms of
// datetime.RFC3339) as milliseconds since the epoch, rounded down.
func parseRFC3339(s string) (int64, error) {
	us, err := datetime.ParseTimestampTZ(s, datetime.RFC3339)
	if err != nil {
		return 0, err
	}
	return time.UnixMicro(us).UnixMilli(), nil
}

// parseFrom reads --from: earliest, latest, an offset, or a time (RFC 3339).
func parseFrom(s string) (wlog.StartAt, error) {
	switch s {
	case "earliest":
		return wlog.Earliest(), nil
	case "latest":
		return wlog.Latest(), nil
	}
	if o, err := strconv.ParseInt(s, 10, 64); err == nil {
		return wlog.AtOffset(o), nil
	}
	ms, err := parseRFC3339(s)
	if err != nil {
		return wlog.StartAt{}, fmt.Errorf("--from: want earliest, latest, an offset or an RFC 3339 time: %w", err)
	}
	return wlog.AtTimestamp(ms), nil
}

func newConsume() *cobra.Command {
	var dataDir, from string
	var partition, maxRecs int
	var follow bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print the values of a topic's records, one per line",
		Long: `Prints the value of each record, one per line, from --from: earliest, latest,
an offset, or an RFC 3339 time (the first record with a timestamp at or after
it). Reads every partition, one after the other, unless --partition is given.
Exits at the end of the log, or after --max records; with --follow, waits for
new records like tail -f until interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := wlog.OpenTopic(dataDir, args[0])
			if err != nil {
				return err
			}
			start, err := parseFrom(from)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("partition") && (partition < 0 || partition >= t.Config.Partitions) {
				return fmt.Errorf("--partition %d: topic %s has partitions 0 to %d", partition, t.Name, t.Config.Partitions-1)
			}
			parts := []int{partition}
			if partition < 0 {
				parts = parts[:0]
				for p := range t.Config.Partitions {
					parts = append(parts, p)
				}
			}
			var readers []*wlog.Reader
			defer func() {
				for _, r := range readers {
					r.Close()
				}
			}()
			for _, p := range parts {
				r, err := t.OpenReader(p, start)
				if err != nil {
					return err
				}
				readers = append(readers, r)
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			return consume(cmd.Context(), readers, out, maxRecs, follow, poll)
		},
	}
	dataDirFlag(cmd, &dataDir)
	f := cmd.Flags()
	f.StringVar(&from, "from", "earliest", "earliest, latest, OFFSET or an RFC 3339 time")
	f.IntVar(&partition, "partition", -1, "partition to read (default: all)")
	f.BoolVar(&follow, "follow", false, "wait for new records at the end of the log")
	f.IntVar(&maxRecs, "max", 0, "stop after this many records (0: no limit)")
	f.DurationVar(&poll, "poll", 50*time.Millisecond, "with --follow, how often to look for new records")
	return cmd
}

// consume reads the readers in turn. Without follow, a reader is done at
// its first io.EOF; with follow, all are polled until ctx is done.
func consume(ctx context.Context, readers []*wlog.Reader, out *bufio.Writer, maxRecs int, follow bool, poll time.Duration) error {
	if ctx == nil {
		ctx = context.Background()
	}
	n := 0
	done := make([]bool, len(readers))
	for {
		progress, live := false, false
		for i, r := range readers {
			if done[i] {
				continue
			}
			live = true
			want := 1000
			if maxRecs > 0 {
				want = min(want, maxRecs-n)
			}
			recs, err := r.Read(ctx, want)
			if err == io.EOF {
				if !follow {
					done[i] = true
				}
				continue
			}
			if err != nil {
				return err
			}
			progress = true
			for _, rec := range recs {
				out.Write(rec.Value)
				out.WriteByte('\n')
			}
			n += len(recs)
			if maxRecs > 0 && n >= maxRecs {
				return out.Flush()
			}
		}
		if !live {
			return out.Flush()
		}
		if !progress && follow {
			if err := out.Flush(); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				if errors.Is(context.Cause(ctx), context.Canceled) {
					return nil // interrupted: the normal end of --follow
				}
				return context.Cause(ctx)
			case <-time.After(poll):
			}
		}
	}
}
