package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/group"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// Exchange through Kafka (group mode, docs/scale-out.md): a hash edge
// from -> to is cut in two. The sender's side becomes a writer node
// chained after from, which encodes each record (weir's value codec) and
// produces it, through the group runner's OpenExchange, into the process's open
// transaction, to partition kg*N/maxParallelism of the repartition topic
// (kg the record's key group, N the topic's partitions); and at every
// checkpoint barrier, and at its end, a watermark marker per upstream task
// (a split of the source its chain starts at) into every partition. The
// receiver's side becomes a source node reading the partitions of the topic
// this process owns (group.Exchange.Source, the Kafka connector's group
// reader: held at barriers, positions committed with the transaction),
// whose readers give the watermark (readerWatermark: the minimum over the
// upstream tasks' markers), followed by the original hash edge into to, so
// the keyed operator and its key groups work as they do in one process.

// readerWatermark is a split reader that knows its split's watermark (the
// reader of a repartition partition): the source task takes it instead of
// generating one from event times.
type readerWatermark interface {
	Watermark() int64
}

// exchangeUp is one sender of a repartition topic: the node a writer is
// chained after, the source its chain starts at (whose splits are the
// upstream tasks), and the side that prefixes the tasks' names when the
// topic has several senders ("" when it has one).
type exchangeUp struct {
	from, src *node
	side      string
	// keyed: from is behind a keyed operator (a chain of KeyBys), and src
	// is the reader of that operator's repartition topic: the upstream
	// tasks are the partitions of that topic (the first stage's tasks),
	// whichever process owns them.
	keyed bool
}

// rewriteExchanges cuts every hash edge of the job into a repartition
// topic's writer and reader, and returns the exchanges for the group
// runner. The node order stays topological: each reader comes just before
// the operator it feeds.
//
// A hash edge behind a Union (every two-input keyed operator: the joins key
// the union of their tagged inputs, connectTwo; or a Union in the job) is
// cut on the union's branches instead: a writer after each branch, all into
// the one topic of the keyed operator (exchangeBranches). The records carry
// what a keyed operator needs to tell the branches apart in their value
// (the tagged union's), so the topic's partitions and their assignment
// need nothing more; the watermark markers carry the branch in their task
// ("<side>:<split>"), and a reader's watermark is the minimum over every
// branch's tasks, which is the minimum over its inputs a union gives in one
// process. Nested unions are flattened into their branches; one-input
// operators between a union and the KeyBy are copied onto every branch.
// The unions and operators no one reads any more go.
func (j *Job) rewriteExchanges() ([]*group.Exchange, error) {
	var xs []*group.Exchange
	before := map[*node][]*node{} // reader nodes to place before a node
	dropped := map[*node]bool{}   // unions and operators cut away
	orig := slices.Clone(j.nodes)
	for _, n := range orig {
		for _, e := range n.inputs {
			if e.part != hashed {
				continue
			}
			if len(n.inputs) > 1 {
				// No API builds this (two-input keyed operators key one
				// union); two topics of one uid would collide.
				return nil, fmt.Errorf("weir: AppID: operator %q has %d inputs and one is keyed (KeyBy): group mode runs keyed operators of one keyed input (joins key the union of their inputs)", n.name, len(n.inputs))
			}
			if e.exchange == nil {
				return nil, fmt.Errorf("weir: AppID: operator %q: its keyed input cannot cross processes", n.name)
			}
			k := len(j.nodes)
			from := e.from
			ups, cut := j.exchangeBranches(n, from)
			x := &group.Exchange{UID: n.uid, MaxParallelism: j.cfg.maxParallelism}
			for i := range ups {
				src, keyed, err := exchangeSourceOf(n, ups[i].from)
				if err != nil {
					return nil, err
				}
				ups[i].src, ups[i].keyed = src, keyed
				if keyed {
					// The first stage's exchange: its partitions are the
					// upstream tasks (GroupRun sets it up first: the
					// exchanges are in topological order).
					x.Upstreams = append(x.Upstreams, src.exchangeOf)
				} else {
					x.Upstreams = append(x.Upstreams, src.impl)
				}
			}
			x.Upstream = x.Upstreams[0]
			e.exchange(x, ups)
			// The branches feed the writers now: what was cut from them
			// (the unions, the operators copied onto the branches) goes
			// unless something else still reads it.
			pruneCut(from, cut, dropped)
			before[n] = append(before[n], j.nodes[k:]...)
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return nil, nil
	}
	// New nodes: the copies of operators and the writers (after their
	// senders; they go at the end, in the order they were made) and the
	// readers with their decoding map (before their receivers).
	placed := map[*node]bool{}
	var order []*node
	for _, n := range orig {
		if dropped[n] {
			continue
		}
		for _, r := range before[n] {
			if r.exchangeOf != nil || (len(r.inputs) == 1 && r.inputs[0].from.exchangeOf != nil) {
				order = append(order, r)
				placed[r] = true
			}
		}
		order = append(order, n)
		placed[n] = true
	}
	for _, n := range j.nodes {
		if !placed[n] && !dropped[n] {
			order = append(order, n)
		}
	}
	j.nodes = order
	for i, n := range j.nodes {
		n.id = i
	}
	return xs, nil
}

// exchangeBranches returns the senders of the KeyBy into n, whose input
// comes from node from. Without a Union behind from (through one-input,
// one-to-one operators) that is from itself. With one, the KeyBy is cut
// on the union's branches: nested unions are flattened into their
// branches, and the one-input operators between a union and the KeyBy
// (Map, Filter, FlatMap: a chain) are copied onto each branch, after
// which its writer goes. Each branch is then what group mode runs behind
// a KeyBy anyway: a Kafka source or a keyed operator through one-to-one
// operators, whose writer knows exactly which upstream tasks its records
// come from and their watermark (a writer after the union would know only
// the union's combined watermark, which a process owning none of one
// input's partitions holds at its minimum for good). The branches are
// numbered in the order of the unions' inputs, depth first: the side that
// names their tasks. cut holds the unions and the operators copied.
//
// The copies compute what the operator computes after the union, since
// each record goes through the union unchanged: a copy sees one branch's
// records and that branch's watermark (a higher one than the union's, as
// a group-mode process's operators see the watermark of the partitions it
// owns rather than of all of them). Copies share the operator's name (and
// so its metrics); their uids are the operator's with the keyed
// operator's uid and the side.
func (j *Job) exchangeBranches(n, from *node) (ups []exchangeUp, cut map[*node]bool) {
	if !unionBehind(from) {
		return []exchangeUp{{from: from}}, nil
	}
	cut = map[*node]bool{}
	var expand func(m *node, chain []*node)
	expand = func(m *node, chain []*node) {
		switch {
		case m.union:
			cut[m] = true
			for _, ie := range m.inputs {
				expand(ie.from, chain)
			}
		case unionBehind(m):
			cut[m] = true
			expand(m.inputs[0].from, append([]*node{m}, chain...))
		default:
			side := strconv.Itoa(len(ups))
			last := m
			for _, op := range chain {
				c := j.addNode(op.name, "", op.parallelism, config{name: op.name, uid: op.uid + "-" + n.uid + "-" + side})
				c.build, c.tee = op.build, op.tee
				op.inputs[0].again(last, c)
				last = c
			}
			ups = append(ups, exchangeUp{from: last, side: side})
		}
	}
	expand(from, nil)
	return ups, cut
}

// unionBehind says whether a Union is reached from m going up through
// one-input, one-to-one operators.
func unionBehind(m *node) bool {
	for !m.union {
		if m.run != nil || m.build == nil || len(m.inputs) != 1 || m.inputs[0].part != forward || m.inputs[0].again == nil {
			return false
		}
		m = m.inputs[0].from
	}
	return true
}

// pruneCut drops m, if it was cut (cut[m]: a union or an operator copied
// onto the branches) and nothing reads it any more, and then what was
// cut before it.
func pruneCut(m *node, cut, dropped map[*node]bool) {
	if !cut[m] || dropped[m] || len(m.outputs) > 0 {
		return
	}
	dropped[m] = true
	for _, ie := range m.inputs {
		ie.from.outputs = slices.DeleteFunc(ie.from.outputs, func(o *edge) bool { return o == ie })
		pruneCut(ie.from, cut, dropped)
	}
}

// exchangeSourceOf returns the node whose splits are the upstream tasks of
// from (a sender of the KeyBy into n): the source its chain starts at, the
// KeyBy following it through one-input, one-to-one operators; or, when the
// chain starts at a keyed operator whose own KeyBy was cut already (a
// chain of KeyBys: rewriteExchanges goes in topological order), the reader
// of that operator's repartition topic, with keyed true. (Unions were cut
// away by exchangeBranches: none is behind from.)
func exchangeSourceOf(n, from *node) (src *node, keyed bool, err error) {
	src = from
	for src.run == nil {
		switch {
		case len(src.inputs) == 0:
			return nil, false, fmt.Errorf("weir: AppID: the KeyBy into operator %q follows operator %q, a side output (late events, bad records): group mode does not run that yet (a KeyBy must follow Kafka sources or keyed operators through one-input operators and unions)", n.name, src.name)
		case len(src.inputs) != 1:
			return nil, false, fmt.Errorf("weir: AppID: the KeyBy into operator %q follows operator %q, which has %d inputs and is no union: group mode does not run that", n.name, src.name, len(src.inputs))
		case src.inputs[0].part == hashed:
			// A keyed operator: its input is the decoding map of its
			// repartition topic's reader.
			in := src.inputs[0].from
			if len(in.inputs) != 1 || in.inputs[0].from.exchangeOf == nil {
				return nil, false, fmt.Errorf("weir: AppID: the KeyBy into operator %q follows keyed operator %q, whose own KeyBy does not cross processes: group mode does not run that", n.name, src.name)
			}
			return in.inputs[0].from, true, nil
		case src.inputs[0].part != forward:
			return nil, false, fmt.Errorf("weir: AppID: the KeyBy into operator %q follows operator %q, whose input is redistributed: group mode does not run that yet (a KeyBy must follow a Kafka source or a keyed operator through one-to-one operators)", n.name, src.name)
		}
		src = src.inputs[0].from
	}
	if src.exchangeOf != nil {
		return nil, false, fmt.Errorf("weir: AppID: the KeyBy into operator %q follows the reader of a repartition topic without its keyed operator: group mode does not run that", n.name)
	}
	return src, false, nil
}

// exRec is a record read from a repartition topic, with its event time.
type exRec[T any] struct {
	v  T
	ts int64
}

// rewriteExchange cuts hash edge e (records of ks) into writers of the
// repartition topic x, one after each sender of ups, and a reader of it
// before e.to.
func rewriteExchange[K comparable, T any](e *edge, ks *KeyedStream[K, T], x *group.Exchange, ups []exchangeUp) {
	j := ks.src.job
	from, to := e.from, e.to
	from.outputs = slices.DeleteFunc(from.outputs, func(o *edge) bool { return o == e })
	enc, dec := exchangeCodec[T]()
	for _, up := range ups {
		// A writer, chained after the sender.
		wcfg := config{name: to.name + " (repartition out)", uid: to.uid + "-repartition-out"}
		if up.side != "" {
			wcfg.name = to.name + " (repartition out " + up.side + ")"
			wcfg.uid += "-" + up.side
		}
		w := j.addNode(wcfg.name, "repartition-out", 0, wcfg)
		w.tee = newTee[struct{}]
		connect(&Stream[T]{job: j, node: up.from}, w, forward)
		var shared sharedMin
		w.build = func(st *subtask, _ any) ([]any, error) {
			tasks, err := upstreamTasks(st, w, up)
			if err != nil {
				return nil, err
			}
			if up.side != "" {
				for i := range tasks {
					tasks[i] = up.side + ":" + tasks[i]
				}
			}
			out, err := j.groupRunner.OpenExchange(st.ctx, x.Topic)
			if err != nil {
				return nil, err
			}
			op := &exchangeOut[K, T]{key: ks.key, hash: ks.hash, maxP: uint64(x.MaxParallelism), n: uint64(x.Partitions),
				enc: enc, w: out, tasks: tasks, wm: watermark.Min, m: st.metrics(w)}
			if up.keyed {
				op.min, op.slot = shared.slots(st.plan, w.parallelism), st.index
			}
			return []any{consumer[T](op)}, nil
		}
	}
	// The reader, and a map from what it reads to T, feeding e.
	rs := FromSource[exRec[T]](j, to.name+" (repartition in)", &exchangeSource[T]{x: x, dec: dec},
		WatermarkStrategy[exRec[T]]{kind: watermark.None, ts: func(r exRec[T]) time.Time { return time.UnixMilli(r.ts) }},
		UID(to.uid+"-repartition-in"))
	rs.node.exchangeOf = x
	m := Map(rs, func(r exRec[T]) T { return r.v }, Name(to.name+" (repartition decode)"), UID(to.uid+"-repartition-decode"))
	e.from = m.node
	m.node.outputs = append(m.node.outputs, e)
}

// upstreamTasks names the upstream tasks of subtask st of writer w: the
// splits that subtask st of its source reads (the writer is chained to the
// source through one-to-one edges, so it sees exactly those splits'
// records and their combined watermark). Behind a keyed operator (up.keyed)
// every subtask of the writer may see records of every split of the
// first stage's reader (the hash edge mixes them): each names all of them,
// and writes the minimum watermark of the run's writer subtasks
// (sharedMin), which no subtask's later records go below.
func upstreamTasks(st *subtask, w *node, up exchangeUp) ([]string, error) {
	for n := w; n != up.src; n = n.inputs[0].from {
		if up.keyed && n.inputs[0].part == hashed {
			break // the keyed operator of the first stage
		}
		if n.inputs[0].part != forward {
			return nil, permanent{fmt.Errorf("weir: AppID: repartition writer %q: operator %q has another parallelism than its input: in group mode the operators between a source or a keyed operator and a KeyBy need its parallelism", w.name, n.name)}
		}
	}
	var tasks []string
	for i, id := range up.src.splitIDs {
		if up.keyed || i%up.src.parallelism == st.index {
			tasks = append(tasks, id)
		}
	}
	return tasks, nil
}

// sharedMin is the watermark of each subtask of one writer node in one
// local run (the plan), for writers behind a keyed operator: their
// markers carry the minimum. Two subtasks name the same first-stage tasks,
// and a marker of one must not pass a watermark the other has not: its
// records would come after the marker, late.
type sharedMin struct {
	mu   sync.Mutex
	plan *plan
	wms  []atomic.Int64
}

// slots returns the run's watermarks, one per subtask, starting at Min.
func (s *sharedMin) slots(p *plan, n int) []atomic.Int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plan != p {
		wms := make([]atomic.Int64, n)
		for i := range wms {
			wms[i].Store(watermark.Min)
		}
		s.plan, s.wms = p, wms
	}
	return s.wms
}

// exchangeCodec returns the encoding of T on a repartition topic: weir's
// value codec, or gob for what it cannot hold (interfaces).
func exchangeCodec[T any]() (func([]byte, *T) ([]byte, error), func([]byte, *T) error) {
	if c, err := codec.OfType[T](codec.Value); err == nil {
		return func(dst []byte, v *T) ([]byte, error) { return c.Append(dst, v), nil },
			func(src []byte, v *T) error {
				rest, err := c.Read(src, v)
				if err == nil && len(rest) > 0 {
					err = fmt.Errorf("%d bytes after the value", len(rest))
				}
				return err
			}
	}
	return func(dst []byte, v *T) ([]byte, error) {
			b, err := codec.Marshal(v)
			return append(dst, b...), err
		},
		func(src []byte, v *T) error { return codec.Unmarshal(src, v) }
}

// exchangeOut is the writer of a repartition topic for one subtask.
type exchangeOut[K comparable, T any] struct {
	key   func(T) K
	hash  func(K) uint64
	maxP  uint64
	n     uint64
	enc   func([]byte, *T) ([]byte, error)
	w     group.ExchangeWriter
	tasks []string
	buf   []byte
	wm    int64
	m     *metrics.Operator
	// min, behind a keyed operator: every subtask's wm, slot this one's.
	min  []atomic.Int64
	slot int
}

func (o *exchangeOut[K, T]) push(b *batch[T]) error {
	for i := range b.data {
		kg := o.hash(o.key(b.data[i])) % o.maxP
		var err error
		if o.buf, err = o.enc(o.buf[:0], &b.data[i]); err != nil {
			return fmt.Errorf("encode a record for the repartition topic: %w", err)
		}
		if err := o.w.Write(int32(kg*o.n/o.maxP), o.buf, b.ts[i]); err != nil {
			return err
		}
	}
	o.m.RecordsIn.Add(int64(len(b.data)))
	if b.watermark > o.wm {
		o.wm = b.watermark
		if o.min != nil {
			o.min[o.slot].Store(o.wm)
		}
	}
	return nil
}

// markers writes the watermark of each upstream task of the subtask into
// every partition.
func (o *exchangeOut[K, T]) markers(wm int64) error {
	if o.min != nil {
		o.min[o.slot].Store(wm)
		for i := range o.min {
			wm = min(wm, o.min[i].Load())
		}
	}
	for _, t := range o.tasks {
		if err := o.w.Watermark(t, wm); err != nil {
			return err
		}
	}
	return nil
}

// barrier writes the markers into the transaction the barrier closes: at
// least one per commit interval.
func (o *exchangeOut[K, T]) barrier(*barrierMsg, *taskSnapshot) error { return o.markers(o.wm) }

// finish writes the end of the upstream tasks (a bounded input read to its
// end): +inf.
func (o *exchangeOut[K, T]) finish() error { return o.markers(watermark.Max) }

// exchangeSource reads the partitions of a repartition topic this process
// owns, decoding each record into T.
type exchangeSource[T any] struct {
	x   *group.Exchange
	dec func([]byte, *T) error
}

func (s *exchangeSource[T]) src() (RestorableSource[group.ExchangeRecord], error) {
	rs, ok := s.x.Source.(RestorableSource[group.ExchangeRecord])
	if !ok {
		return nil, fmt.Errorf("weir: repartition topic of %q: no reader (the group runner did not set one)", s.x.UID)
	}
	return rs, nil
}

func (s *exchangeSource[T]) Splits(ctx context.Context) ([]Split, error) {
	rs, err := s.src()
	if err != nil {
		return nil, err
	}
	return rs.Splits(ctx)
}

func (s *exchangeSource[T]) Open(ctx context.Context, sp Split) (SplitReader[exRec[T]], error) {
	rs, err := s.src()
	if err != nil {
		return nil, err
	}
	r, err := rs.Open(ctx, sp)
	if err != nil {
		return nil, err
	}
	return &exchangeReader[T]{r: r, dec: s.dec, topic: s.x.Topic}, nil
}

func (s *exchangeSource[T]) OpenAt(ctx context.Context, sp Split, pos []byte) (SplitReader[exRec[T]], error) {
	rs, err := s.src()
	if err != nil {
		return nil, err
	}
	r, err := rs.OpenAt(ctx, sp, pos)
	if err != nil {
		return nil, err
	}
	return &exchangeReader[T]{r: r, dec: s.dec, topic: s.x.Topic}, nil
}

// exchangeReader decodes what the connector's reader of a repartition
// partition returns.
type exchangeReader[T any] struct {
	r     SplitReader[group.ExchangeRecord]
	raw   []group.ExchangeRecord
	dec   func([]byte, *T) error
	topic string
}

func (r *exchangeReader[T]) Read(ctx context.Context, dst []exRec[T]) (int, error) {
	if cap(r.raw) < len(dst) {
		r.raw = make([]group.ExchangeRecord, len(dst))
	}
	raw := r.raw[:len(dst)]
	n, err := r.r.Read(ctx, raw)
	for i := range n {
		var zero T
		dst[i].v = zero
		if derr := r.dec(raw[i].Value, &dst[i].v); derr != nil {
			return 0, fmt.Errorf("weir: repartition topic %q partition %d offset %d: malformed record: %w", r.topic, raw[i].Partition, raw[i].Offset, derr)
		}
		dst[i].ts = raw[i].TS
		raw[i].Value = nil
	}
	return n, err
}

func (r *exchangeReader[T]) Position() ([]byte, error) {
	cr, ok := r.r.(CheckpointedReader[group.ExchangeRecord])
	if !ok {
		return nil, errors.New("weir: repartition reader without positions")
	}
	return cr.Position()
}

func (r *exchangeReader[T]) NotifyCheckpointComplete(ctx context.Context, id int64, pos []byte) error {
	if l, ok := r.r.(CheckpointListener); ok {
		return l.NotifyCheckpointComplete(ctx, id, pos)
	}
	return nil
}

func (r *exchangeReader[T]) Watermark() int64 {
	if w, ok := r.r.(readerWatermark); ok {
		return w.Watermark()
	}
	return watermark.Min
}

func (r *exchangeReader[T]) Close() error { return r.r.Close() }
