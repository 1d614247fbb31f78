package kafka

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/internal/group"
)

// Changelogs (docs/scale-out.md, "State that moves"): the keyed state of
// each keyed operator of a group-mode job lives in a compacted topic
// "<app id>-<operator uid>-changelog" with as many partitions as the topic
// that feeds the operator. At every commit the runner writes, into the
// open transaction (with the output and the input offsets), each owned key
// group whose snapshot changed since the last commit of the local run: key
// the key group in decimal, value the key group's snapshot exactly as a
// checkpoint's state file holds it, framed with a checksum; a tombstone
// for a key group that became empty. The topic that feeds the operator is
// the repartition topic of its KeyBy (N partitions): key group kg goes to
// partition kg*N/maxParallelism of both, so a process restores exactly the
// changelog partitions of the repartition partitions it owns. A local run
// starts by reading them read_committed to their last stable offset, after
// the committed offsets are stable. The operator's watermark on restore is
// the minimum of the upstream tasks' watermarks committed as the
// repartition offsets' metadata in the same transaction (what the reader
// starts from too). Records "wm/<partition>" with the operator's
// watermark, which the first version wrote, are still read (checked), so
// a topic written by it restores; nothing writes them any more.
//
// Value framing: 'w' 'c', a kind byte ('g': a key group's snapshot, 'w':
// a watermark, 8 bytes big-endian), the CRC-32C of what follows (4 bytes
// big-endian), the payload.

const (
	clMagic0, clMagic1  = 'w', 'c'
	clKindGroup         = 'g'
	clKindWatermark     = 'w'
	clHeader            = 7
	changelogSuffix     = "-changelog"
	watermarkKeyPrefix  = "wm/"
	changelogCompaction = "compact"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// hashSeed hashes key-group snapshots to tell the changed ones (within
// one process only).
var hashSeed = maphash.MakeSeed()

// ChangelogTopic is the changelog topic of the keyed operator with UID uid
// in the group-mode job of app id appID: "<app id>-<uid>-changelog", with
// characters Kafka does not allow in topic names replaced by '_'.
func ChangelogTopic(appID, uid string) string {
	return appID + "-" + topicSafe(uid) + changelogSuffix
}

// OwnedKeyGroups returns the key groups a process owns of a keyed operator
// fed by a topic with n partitions, of which it owns the partitions owned:
// key group kg goes with partition kg*n/maxParallelism (the partitioning
// of repartition topics, docs/scale-out.md).
func OwnedKeyGroups(owned []int32, n, maxParallelism int) []int {
	var out []int
	for kg := 0; kg < maxParallelism; kg++ {
		if slices.Contains(owned, keyGroupPartition(kg, n, maxParallelism)) {
			out = append(out, kg)
		}
	}
	return out
}

// keyGroupPartition is the partition of the feeding topic (and of the
// changelog) that carries key group kg.
func keyGroupPartition(kg, n, maxParallelism int) int32 {
	return int32(kg * n / maxParallelism)
}

// keyedOp is a keyed operator of the job with its changelog.
type keyedOp struct {
	uid, name string
	changelog string
	// feed is the topic whose partitions decide which key groups a
	// process owns, n its partition count.
	feed string
	n    int
	// x is the exchange of the feed: the per-task watermarks committed
	// with its offsets are the operator's watermark on restore.
	x *group.Exchange
}

// setupChangelogs takes the repartition topic feeding each keyed operator
// (its partitions decide the key groups a process owns) and creates the changelog
// topics (compacted, n partitions) that do not exist.
func (r *groupRunner) setupChangelogs(ctx context.Context) error {
	if len(r.job.Keyed) == 0 {
		return nil
	}
	if r.job.MaxParallelism <= 0 {
		return fmt.Errorf("kafka: app id %q: max parallelism %d", r.job.AppID, r.job.MaxParallelism)
	}
	for _, op := range r.job.Keyed {
		// The operator's input is the repartition topic of its KeyBy
		// (setupExchanges created it): a process owns the key groups of
		// the repartition partitions it is assigned, and the changelog
		// has as many partitions, with the same mapping. (A one-partition
		// input is the case N=1: one process owns every key group.)
		x := op.Exchange
		if x == nil || x.Topic == "" || x.Partitions <= 0 {
			return fmt.Errorf("weir: AppID: operator %q is keyed (KeyBy) but not fed by a repartition topic: group mode cannot tell which process owns its key groups", op.Name)
		}
		k := keyedOp{uid: op.UID, name: op.Name, changelog: ChangelogTopic(r.job.AppID, op.UID), feed: x.Topic, n: x.Partitions, x: x}
		if err := r.createChangelog(ctx, k); err != nil {
			return err
		}
		r.keyed = append(r.keyed, k)
	}
	return nil
}

// createChangelog creates k's changelog topic, or checks the one there.
func (r *groupRunner) createChangelog(ctx context.Context, k keyedOp) error {
	policy := changelogCompaction
	return retry(ctx, r.client.retryTimeout, "create changelog topic "+k.changelog, func() error {
		resp, err := r.adm.CreateTopic(ctx, int32(k.n), -1, map[string]*string{"cleanup.policy": &policy}, k.changelog)
		if err == nil {
			err = resp.Err
		}
		if err == nil {
			r.log.Info("group: created changelog topic", "topic", k.changelog, "partitions", k.n)
			return nil
		}
		if !errors.Is(err, kerr.TopicAlreadyExists) {
			return err
		}
		d, err := r.adm.ListTopics(ctx, k.changelog)
		if err != nil {
			return err
		}
		if got := len(d[k.changelog].Partitions); got != k.n {
			return fmt.Errorf("kafka: changelog topic %q has %d partitions, the topic %q feeding operator %q has %d: they must be equal (key group kg lives in partition kg*partitions/max-parallelism)",
				k.changelog, got, k.feed, k.name, k.n)
		}
		return nil
	})
}

// restoreStats is what one local run restored from one changelog.
type restoreStats struct {
	Changelog string `json:"c"`
	KeyGroups int64  `json:"kg"`
	Bytes     int64  `json:"b"`
}

// restoreNote is the last restore of a process, written as the metadata
// of the offsets it commits, for `weir group describe`.
type restoreNote struct {
	Member   string         `json:"m"`
	AtMillis int64          `json:"t"`
	TookMs   int64          `json:"ms"`
	Restores []restoreStats `json:"r"`
}

// changelogRun is the changelog side of one local run: the key groups it
// owns, what it last wrote of each, and what it restored.
type changelogRun struct {
	lr    *localRun
	ops   []*runOp
	local *group.Local
	note  string // JSON restoreNote; "" without keyed operators
}

type runOp struct {
	keyedOp
	owned  []int32        // partitions of the feed this run owns
	groups map[int]bool   // the key groups it owns
	last   map[int]uint64 // hash of the snapshot last written (or restored), by key group
}

// newChangelogRun restores the keyed state of the partitions in parts
// from the changelogs and returns what the local run gets in its context.
func (r *groupRunner) newChangelogRun(ctx context.Context, lr *localRun, parts []tp) (*changelogRun, error) {
	c := &changelogRun{lr: lr}
	c.local = &group.Local{Persist: c.persist}
	if len(r.keyed) == 0 {
		return c, nil
	}
	start := time.Now()
	note := restoreNote{Member: r.member, AtMillis: start.UnixMilli()}
	var froms []string
	for _, k := range r.keyed {
		op := &runOp{keyedOp: k, groups: map[int]bool{}, last: map[int]uint64{}}
		for _, p := range parts {
			if p.topic == k.feed {
				op.owned = append(op.owned, p.partition)
			}
		}
		for _, kg := range OwnedKeyGroups(op.owned, k.n, r.job.MaxParallelism) {
			op.groups[kg] = true
		}
		c.ops = append(c.ops, op)
		if len(op.owned) == 0 {
			continue
		}
		states, st, err := r.readChangelog(ctx, op, lr.startMeta)
		if err != nil {
			return nil, err
		}
		for _, s := range states {
			for kg, data := range s.Groups {
				op.last[kg] = maphash.Bytes(hashSeed, data)
			}
		}
		c.local.Restore = append(c.local.Restore, states...)
		c.local.KeyGroups += st.KeyGroups
		c.local.Bytes += st.Bytes
		note.Restores = append(note.Restores, st)
		froms = append(froms, fmt.Sprintf("%s %v", k.changelog, op.owned))
	}
	note.TookMs = time.Since(start).Milliseconds()
	c.local.From = "changelog topics " + strings.Join(froms, ", ")
	b, _ := json.Marshal(note)
	c.note = string(b)
	r.log.Info("group: restored keyed state from the changelogs", "key-groups", c.local.KeyGroups, "bytes", c.local.Bytes,
		"took", time.Since(start), "from", c.local.From)
	return c, nil
}

// readChangelog reads the partitions op owns of its changelog,
// read_committed, to their last stable offsets: per partition the latest
// snapshot of each key group (a tombstone deletes it) and the watermark.
func (r *groupRunner) readChangelog(ctx context.Context, op *runOp, meta map[tp]string) ([]group.KeyedState, restoreStats, error) {
	st := restoreStats{Changelog: op.changelog}
	var starts, ends kadm.ListedOffsets
	// Past the transaction timeout, as committed waits for the offsets.
	wait := max(r.client.retryTimeout, groupTxnTimeout+15*time.Second)
	logged := false
	err := retry(ctx, wait, "list the offsets of changelog "+op.changelog, func() error {
		var err error
		if starts, err = r.adm.ListStartOffsets(ctx, op.changelog); err != nil {
			return err
		}
		if ends, err = r.adm.ListCommittedOffsets(ctx, op.changelog); err != nil {
			return err
		}
		if err := starts.Error(); err != nil {
			return err
		}
		if err := ends.Error(); err != nil {
			return err
		}
		// The state must be at least what the committed offsets were
		// written with: in Apache Kafka the commit's markers reach the
		// changelog partitions after the offsets are stable.
		for _, p := range op.owned {
			want := changelogEnd(meta[tp{op.feed, p}])
			if e, ok := ends.Lookup(op.changelog, p); ok && e.Offset < want {
				if !logged {
					logged = true
					r.log.Info("group: waiting for the changelog's last commit", "topic", op.changelog, "partition", p,
						"last-stable-offset", e.Offset, "want", want)
				}
				if r.onChangelogBehind != nil {
					r.onChangelogBehind(op.changelog, p)
				}
				return fmt.Errorf("%w: changelog topic %q partition %d: last stable offset %d, committed with %d",
					errChangelogBehind, op.changelog, p, e.Offset, want)
			}
		}
		return nil
	})
	if err != nil {
		return nil, st, fmt.Errorf("kafka: changelog topic %q: %w", op.changelog, err)
	}
	type partState struct {
		groups map[int][]byte
		wm     int64
		end    int64
	}
	byPart := map[int32]*partState{}
	consume := map[string]map[int32]kgo.Offset{op.changelog: {}}
	for _, p := range op.owned {
		s, _ := starts.Lookup(op.changelog, p)
		e, ok := ends.Lookup(op.changelog, p)
		if !ok {
			return nil, st, fmt.Errorf("kafka: changelog topic %q has no partition %d", op.changelog, p)
		}
		byPart[p] = &partState{groups: map[int][]byte{}, wm: math.MinInt64, end: e.Offset}
		if e.Offset > s.Offset {
			consume[op.changelog][p] = kgo.NewOffset().At(s.Offset)
		}
	}
	if len(consume[op.changelog]) > 0 {
		base := *r.client
		base.extra = nil
		cl, err := kgo.NewClient(append(base.kgoOpts(),
			kgo.ConsumePartitions(consume),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			// Control records are kept so that the position reaches the
			// last stable offset when a transaction marker ends the log.
			kgo.KeepControlRecords(),
		)...)
		if err != nil {
			return nil, st, fmt.Errorf("kafka: changelog topic %q: %w", op.changelog, err)
		}
		defer cl.Close()
		left := len(consume[op.changelog])
		for left > 0 {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return nil, st, ctx.Err()
			}
			var ferr error
			fs.EachError(func(t string, p int32, err error) {
				ferr = errors.Join(ferr, fmt.Errorf("kafka: read changelog topic %q partition %d: %w", t, p, err))
			})
			if ferr != nil {
				return nil, st, ferr
			}
			var derr error
			fs.EachRecord(func(rec *kgo.Record) {
				ps := byPart[rec.Partition]
				if derr != nil || ps == nil || rec.Offset >= ps.end {
					return
				}
				if !rec.Attrs.IsControl() {
					derr = applyChangelogRecord(rec, op, ps.groups, &ps.wm, r.job.MaxParallelism)
				}
				if rec.Offset+1 >= ps.end {
					left--
					ps.end = -1 // done: later records are past the restore point
				}
			})
			if derr != nil {
				return nil, st, derr
			}
		}
	}
	var out []group.KeyedState
	for _, p := range op.owned {
		ps := byPart[p]
		if op.x != nil {
			// One source of truth for the watermark: the upstream tasks'
			// watermarks committed with the repartition partition's offset
			// (the reader starts from them too), written in the same
			// transaction as the key groups read here.
			ps.wm = newTracker(op.x.Tasks, meta[tp{op.feed, p}]).wm
		}
		for _, data := range ps.groups {
			st.KeyGroups++
			st.Bytes += int64(len(data))
		}
		if len(ps.groups) > 0 {
			out = append(out, group.KeyedState{UID: op.uid, Watermark: ps.wm, Groups: ps.groups})
		}
	}
	return out, st, nil
}

// applyChangelogRecord applies one changelog record to the state of its
// partition: bad records are an error naming topic, partition and offset.
func applyChangelogRecord(rec *kgo.Record, op *runOp, groups map[int][]byte, wm *int64, maxP int) error {
	where := func(format string, args ...any) error {
		return fmt.Errorf("kafka: changelog topic %q partition %d offset %d: %s", rec.Topic, rec.Partition, rec.Offset, fmt.Sprintf(format, args...))
	}
	key := string(rec.Key)
	if strings.HasPrefix(key, watermarkKeyPrefix) {
		p, err := strconv.ParseInt(key[len(watermarkKeyPrefix):], 10, 32)
		if err != nil || int32(p) != rec.Partition {
			return where("watermark key %q does not name this partition", key)
		}
		kind, payload, err := unframe(rec.Value)
		if err != nil {
			return where("%v", err)
		}
		if kind != clKindWatermark || len(payload) != 8 {
			return where("watermark record of kind %q with %d bytes, want %q with 8", kind, len(payload), clKindWatermark)
		}
		*wm = int64(binary.BigEndian.Uint64(payload))
		return nil
	}
	kg, err := strconv.Atoi(key)
	if err != nil || kg < 0 || kg >= maxP {
		return where("key %q is not a key group (0..%d)", key, maxP-1)
	}
	if want := keyGroupPartition(kg, op.n, maxP); want != rec.Partition {
		return where("key group %d belongs in partition %d", kg, want)
	}
	if rec.Value == nil {
		delete(groups, kg)
		return nil
	}
	kind, payload, err := unframe(rec.Value)
	if err != nil {
		return where("key group %d: %v", kg, err)
	}
	if kind != clKindGroup {
		return where("key group %d: record of kind %q, want %q", kg, kind, clKindGroup)
	}
	groups[kg] = payload
	return nil
}

// frame appends a framed changelog value of kind to dst.
func frame(dst []byte, kind byte, payload []byte) []byte {
	dst = append(dst, clMagic0, clMagic1, kind)
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

func unframe(v []byte) (kind byte, payload []byte, err error) {
	if len(v) < clHeader || v[0] != clMagic0 || v[1] != clMagic1 {
		return 0, nil, fmt.Errorf("not a weir changelog record (%d bytes)", len(v))
	}
	payload = v[clHeader:]
	if got, want := crc32.Checksum(payload, castagnoli), binary.BigEndian.Uint32(v[3:clHeader]); got != want {
		return 0, nil, fmt.Errorf("checksum mismatch (stored %08x, computed %08x): the record is corrupt", want, got)
	}
	return v[2], payload, nil
}

// persist writes the keyed state of a completed checkpoint of the local
// run into the open transaction: the owned key groups whose snapshot
// changed since the last write, and tombstones for those that became
// empty (the watermark is the repartition offsets' metadata). It is called
// from the checkpoint coordinator before the readers report the
// checkpoint, so the records are in the transaction the runner commits
// with the readers' positions.
func (c *changelogRun) persist(id int64, states []group.KeyedState) error {
	lr := c.lr
	if err := lr.failed(); err != nil {
		return err
	}
	for _, s := range states {
		if !slices.ContainsFunc(c.ops, func(op *runOp) bool { return op.uid == s.UID }) {
			// Keyed state of an operator not behind a hash edge: it
			// would not move with its key groups.
			return c.fail(fmt.Errorf("kafka: checkpoint %d: operator %q has keyed state, but no changelog", id, s.UID))
		}
	}
	ctx := context.Background()
	for _, op := range c.ops {
		if len(op.owned) == 0 {
			continue
		}
		seen := map[int]bool{}
		found := false
		for _, s := range states {
			if s.UID != op.uid {
				continue
			}
			found = true
			for kg, data := range s.Groups {
				if !op.groups[kg] {
					continue // not ours: another process's key group
				}
				seen[kg] = true
				h := maphash.Bytes(hashSeed, data)
				if old, ok := op.last[kg]; ok && old == h {
					continue
				}
				op.last[kg] = h
				c.produce(ctx, op, &kgo.Record{Topic: op.changelog, Partition: keyGroupPartition(kg, op.n, lr.r.job.MaxParallelism),
					Key: strconv.AppendInt(nil, int64(kg), 10), Value: frame(make([]byte, 0, clHeader+len(data)), clKindGroup, data)})
			}
		}
		if !found {
			continue // no snapshot of this operator in this checkpoint
		}
		for kg := range op.last {
			if !seen[kg] {
				delete(op.last, kg)
				c.produce(ctx, op, &kgo.Record{Topic: op.changelog, Partition: keyGroupPartition(kg, op.n, lr.r.job.MaxParallelism),
					Key: strconv.AppendInt(nil, int64(kg), 10)})
			}
		}
	}
	return nil
}

// produce writes rec to op's changelog in the open transaction and notes
// where it lands (see changelogEnds).
func (c *changelogRun) produce(ctx context.Context, op *runOp, rec *kgo.Record) {
	feed := tp{op.feed, rec.Partition} // changelog partition p holds the key groups of feed partition p
	c.lr.wroteChangelog(feed, -1)
	c.lr.r.cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
		if err != nil {
			c.lr.fail(fmt.Errorf("kafka: produce to changelog topic %q partition %d: %w", r.Topic, r.Partition, err))
			return
		}
		c.lr.wroteChangelog(feed, r.Offset+1)
	})
}

// clEndSep separates a repartition partition's per-task watermarks from
// the end of its changelog partition in the offset metadata:
// "weir-wm1:task=wm,...;cl=<offset>".
const clEndSep = ";cl="

// wroteChangelog notes that the open transaction wrote the changelog
// partition of feed partition p, up to end (-1: produced, offset not yet
// known).
func (lr *localRun) wroteChangelog(p tp, end int64) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.mu.clEnd == nil {
		lr.mu.clEnd = map[tp]int64{}
	}
	if old, ok := lr.mu.clEnd[p]; ok {
		end = max(old, end)
	}
	lr.mu.clEnd[p] = end
}

// changelogEnds adds to the metadata of each repartition partition whose
// changelog partition the transaction wrote the offset just past the last
// record it wrote there. It is called when the transaction's records are
// flushed (their offsets known), as its offsets are committed. In Apache
// Kafka a transaction's markers reach each partition separately, after
// the commit; a process restoring that changelog partition waits until
// its last stable offset has passed this end (readChangelog), so it
// never restores state older than the offsets it continues from.
func (lr *localRun) changelogEnds(marks map[string]map[int32]kgo.EpochOffset, metas map[tp]string) map[tp]string {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	for p, end := range lr.mu.clEnd {
		if _, ok := marks[p.topic][p.partition]; !ok || end < 0 {
			continue
		}
		m, ok := metas[p]
		if !ok {
			m = metaPrefix
		}
		metas[p] = m + clEndSep + strconv.FormatInt(end, 10)
	}
	clear(lr.mu.clEnd)
	return metas
}

// changelogEnd is the end of a changelog partition written with a
// repartition partition's committed offset (0: none written).
func changelogEnd(meta string) int64 {
	_, v, ok := strings.Cut(meta, clEndSep)
	if !ok {
		return 0
	}
	end, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	return end
}

// errChangelogBehind: a changelog partition's last stable offset has not
// reached the end its committed offsets were written with (the commit's
// markers are on their way). It is retried.
var errChangelogBehind = errors.New("the changelog is behind its committed offsets")

// fail fails the local run: the runner sees it at its next commit, which
// the failure wakes (the readers hold for a commit that will not come).
func (c *changelogRun) fail(err error) error {
	c.lr.fail(err)
	select {
	case c.lr.commitReq <- struct{}{}:
	default:
	}
	return err
}
