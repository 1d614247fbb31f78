package wlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// TopicConfig is the configuration of a topic, saved in its topic.json.
type TopicConfig struct {
	// Partitions is the number of partitions (at least 1).
	Partitions int
	// Compact makes the topic a changelog: Writer.Clean keeps only the
	// latest record per key in closed segments.
	Compact bool
	// Retention deletes closed segments whose newest record is older; 0
	// keeps them forever.
	Retention time.Duration
	// RetentionBytes deletes the oldest closed segments while a partition
	// is larger; 0 means no limit.
	RetentionBytes int64
	// SegmentBytes is the size at which the writer starts a new segment
	// (default 64 MiB).
	SegmentBytes int64
	// TombstoneRetention is how long a tombstone (nil value) of a compacted
	// topic is kept after its segment was last written (default 24h).
	TombstoneRetention time.Duration
}

const (
	defaultSegmentBytes       = 64 << 20
	defaultTombstoneRetention = 24 * time.Hour
	metaFile                  = "topic.json"
)

func (c *TopicConfig) ensureDefaults() {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = defaultSegmentBytes
	}
	if c.TombstoneRetention == 0 {
		c.TombstoneRetention = defaultTombstoneRetention
	}
}

// Limits of a topic's configuration.
const (
	// MaxPartitions is the largest number of partitions of a topic: each
	// is a directory, created when the topic is, and a reader or writer of
	// its own.
	MaxPartitions = 10_000
	// MinSegmentBytes and MaxSegmentBytes bound TopicConfig.SegmentBytes
	// (index entries hold 32-bit positions).
	MinSegmentBytes = batchHeaderSize
	MaxSegmentBytes = 1 << 31
)

func (c TopicConfig) validate() error {
	switch {
	case c.Partitions < 1 || c.Partitions > MaxPartitions:
		return fmt.Errorf("wlog: %d partitions: want 1 to %d", c.Partitions, MaxPartitions)
	case c.Retention < 0 || c.RetentionBytes < 0 || c.TombstoneRetention < 0:
		return errors.New("wlog: negative retention")
	case c.SegmentBytes < MinSegmentBytes || c.SegmentBytes > MaxSegmentBytes:
		return fmt.Errorf("wlog: segment bytes %d: want %d to %d", c.SegmentBytes, MinSegmentBytes, MaxSegmentBytes)
	}
	return nil
}

// topicMeta is topic.json: durations in milliseconds, for people reading it.
type topicMeta struct {
	Version              int   `json:"version"`
	Partitions           int   `json:"partitions"`
	Compact              bool  `json:"compact"`
	RetentionMs          int64 `json:"retention_ms"`
	RetentionBytes       int64 `json:"retention_bytes"`
	SegmentBytes         int64 `json:"segment_bytes"`
	TombstoneRetentionMs int64 `json:"tombstone_retention_ms"`
}

// MaxTopicName is the longest topic name. Names are file names, and the
// longest name weir makes from one is the directory a topic is renamed to
// while it is deleted, ".delete-NAME-" and 19 digits: with the usual
// limit of 255 bytes for a file name, that leaves 227 (Kafka's limit, 249,
// would fail on the file system).
const MaxTopicName = 255 - len(".delete-") - len("-") - 19

// topicName is Kafka's rule ([a-zA-Z0-9._-]), minus names that start with
// '.' (hidden files, and weir's own .create-/.delete- directories) or '-'
// (taken for a flag on command lines).
var topicName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// oldTopicName is the rule before MaxTopicName: topics created then
// still open, and producer ids (sink.go) keep it.
var oldTopicName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

// checkExisting checks the name of a topic to open or delete: only that it
// is a plain file name (the rule it was created under may be older).
func checkExisting(name string) error {
	if !oldTopicName.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("wlog: invalid topic name %q (letters, digits, '.', '_', '-')", name)
	}
	return nil
}

// checkName checks the name of a topic to create.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("wlog: empty topic name")
	case len(name) > MaxTopicName:
		return fmt.Errorf("wlog: topic name of %d characters: at most %d", len(name), MaxTopicName)
	case !topicName.MatchString(name):
		return fmt.Errorf("wlog: invalid topic name %q: letters, digits, '.', '_' and '-', not starting with '.' or '-'", name)
	}
	return nil
}

// ErrTopicExists and ErrNoTopic are returned by CreateTopic and OpenTopic.
var (
	ErrTopicExists = errors.New("wlog: topic exists")
	ErrNoTopic     = errors.New("wlog: no such topic")
)

// Topic is an open topic: its directory and configuration. It holds no
// resources.
type Topic struct {
	Name   string
	Dir    string // the topic's directory
	Config TopicConfig
}

// CreateTopic creates topic name in the log directory dir (created if
// missing).
func CreateTopic(dir, name string, cfg TopicConfig) (*Topic, error) {
	return CreateTopicContext(context.Background(), dir, name, cfg)
}

// CreateTopicContext is CreateTopic, stopped when ctx is done: then, as on
// any failure, nothing of the topic is left behind.
func CreateTopicContext(ctx context.Context, dir, name string, cfg TopicConfig) (*Topic, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tdir := filepath.Join(dir, name)
	// Build the topic in a hidden directory and rename it into place, so
	// that a topic is either complete or absent.
	tmp, err := os.MkdirTemp(dir, ".create-"+name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for p := range cfg.Partitions {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("wlog: create topic %s: %w", name, context.Cause(ctx))
		}
		if err := os.Mkdir(filepath.Join(tmp, strconv.Itoa(p)), 0o755); err != nil {
			return nil, err
		}
	}
	m := topicMeta{
		Version: 1, Partitions: cfg.Partitions, Compact: cfg.Compact,
		RetentionMs: cfg.Retention.Milliseconds(), RetentionBytes: cfg.RetentionBytes,
		SegmentBytes: cfg.SegmentBytes, TombstoneRetentionMs: cfg.TombstoneRetention.Milliseconds(),
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, metaFile), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, tdir); err != nil {
		if _, serr := os.Stat(tdir); serr == nil {
			return nil, fmt.Errorf("%w: %s", ErrTopicExists, name)
		}
		return nil, err
	}
	syncDir(dir)
	return &Topic{Name: name, Dir: tdir, Config: cfg}, nil
}

// OpenTopic reads the configuration of topic name in dir.
func OpenTopic(dir, name string) (*Topic, error) {
	if err := checkExisting(name); err != nil {
		return nil, err
	}
	tdir := filepath.Join(dir, name)
	b, err := os.ReadFile(filepath.Join(tdir, metaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (in %s)", ErrNoTopic, name, dir)
	}
	if err != nil {
		return nil, err
	}
	var m topicMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("wlog: topic %s: %s: %w", name, metaFile, err)
	}
	cfg := TopicConfig{
		Partitions: m.Partitions, Compact: m.Compact,
		Retention: time.Duration(m.RetentionMs) * time.Millisecond, RetentionBytes: m.RetentionBytes,
		SegmentBytes: m.SegmentBytes, TombstoneRetention: time.Duration(m.TombstoneRetentionMs) * time.Millisecond,
	}
	cfg.ensureDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("wlog: topic %s: %w", name, err)
	}
	return &Topic{Name: name, Dir: tdir, Config: cfg}, nil
}

// ListTopics returns the names of the topics in dir, sorted. A missing dir
// has no topics.
func ListTopics(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() || checkExisting(e.Name()) != nil || e.Name()[0] == '.' {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), metaFile)); err == nil {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// DeleteTopic deletes topic name. It fails with a *LockedError if a
// partition has a writer. Readers that have files open keep reading them.
func DeleteTopic(dir, name string) error {
	t, err := OpenTopic(dir, name)
	if err != nil {
		return err
	}
	// Hold every partition's lock while the topic is renamed away, so that
	// no writer appends to a topic being deleted.
	for p := range t.Config.Partitions {
		f, err := lockDir(t.partDir(p))
		if err == errLockHeld {
			return &LockedError{Topic: name, Partition: p}
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if f != nil {
			defer f.Close()
		}
	}
	gone := filepath.Join(dir, fmt.Sprintf(".delete-%s-%d", name, time.Now().UnixNano()))
	if err := os.Rename(t.Dir, gone); err != nil {
		return err
	}
	syncDir(dir)
	return os.RemoveAll(gone)
}

func (t *Topic) partDir(p int) string { return filepath.Join(t.Dir, strconv.Itoa(p)) }

func (t *Topic) checkPartition(p int) error {
	if p < 0 || p >= t.Config.Partitions {
		return fmt.Errorf("wlog: topic %s has no partition %d (it has %d)", t.Name, p, t.Config.Partitions)
	}
	return nil
}

// PartitionInfo describes a partition at one moment.
type PartitionInfo struct {
	Partition int
	// Earliest is the base offset of the oldest segment; Next the offset
	// the next record will get. Next-Earliest counts records only if the
	// partition has no gaps (compaction makes gaps).
	Earliest, Next int64
	Segments       int
	Bytes          int64
}

// Describe returns information about each partition. It takes no locks.
func (t *Topic) Describe() ([]PartitionInfo, error) {
	infos := make([]PartitionInfo, t.Config.Partitions)
	for p := range infos {
		dir := t.partDir(p)
		bases, err := listSegments(dir)
		if err != nil {
			return nil, err
		}
		info := PartitionInfo{Partition: p}
		for _, b := range bases {
			if st, err := os.Stat(logPath(dir, b)); err == nil {
				info.Bytes += st.Size()
			}
		}
		info.Segments = len(bases)
		if err := checkChain(t.Name, p, dir, bases, t.Config); err != nil {
			return nil, err
		}
		if len(bases) == 0 {
			if rp, err := readRecovery(dir); err != nil {
				return nil, err
			} else if rp.ok {
				return nil, &GapError{Topic: t.Name, Partition: p, Segment: logPath(dir, rp.base), From: rp.base, To: rp.next,
					Reason: "is missing (the partition has no segments left, but its recovery point is in it)"}
			}
		}
		if len(bases) > 0 {
			info.Earliest = bases[0]
			end, err := tailOf(t.Name, p, dir, bases[len(bases)-1])
			if err != nil {
				return nil, err
			}
			info.Next = end.nextOffset
		}
		infos[p] = info
	}
	return infos, nil
}

// tailOf scans the valid prefix of a segment without changing it. Damage
// before its end (see CorruptError) or below the partition's recovery
// point is an error; a torn tail is not.
func tailOf(topic string, p int, dir string, base int64) (scanResult, error) {
	rp, err := readRecovery(dir)
	if err != nil {
		return scanResult{}, err
	}
	f, err := os.Open(logPath(dir, base))
	if err != nil {
		return scanResult{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return scanResult{}, err
	}
	ents, err := readIndex(indexPath(dir, base))
	if err != nil {
		return scanResult{}, err
	}
	res, err := scanSegment(f, base, ents, st.Size())
	if err == nil && res.damage != nil {
		err = res.damage.errorFor(topic, p, logPath(dir, base))
	}
	if err == nil {
		err = checkLast(topic, p, dir, base, st.Size(), rp)
	}
	if durable := rp.durableEnd(base); err == nil && res.end < st.Size() && res.end < durable {
		// A batch being written then may be complete now.
		if _, _, berr := batchAt(f, res.end, nil); berr != nil {
			err = belowRecovery(topic, p, logPath(dir, base), res.end, res.nextOffset, durable, res.err)
		}
	}
	return res, err
}

// syncDir fsyncs a directory so that file creations and renames in it are
// durable; errors are ignored (some file systems do not support it).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
