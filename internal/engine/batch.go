package engine

import (
	"reflect"
	"sync"

	"github.com/weirstream/weir/internal/hashtable"
	"github.com/weirstream/weir/internal/watermark"
)

// header is the untyped part of a batch: event timestamps and watermarks,
// which the task loop reads without knowing the record type.
//
// A batch is a sequence of (watermark, record) steps followed by a final
// watermark: wm[i] is the watermark in effect just before record i, and
// watermark is the one after the last record. Carrying the watermark per
// record costs 8 bytes but makes results independent of where batches are
// cut: a record is judged late against exactly the watermark that a
// record-at-a-time engine emitting a watermark after every event would use.
type header struct {
	ts        []int64 // event time of each record, ms since the epoch
	wm        []int64 // watermark in effect before each record
	watermark int64   // watermark after the last record
	// idle says the sender has gone idle after this batch: downstream leaves
	// its channel out of the watermark minimum until it sends again.
	idle bool
}

func (h *header) hdr() *header { return h }

type headed interface{ hdr() *header }

// batch is the unit that moves between operators and tasks. Within a chain
// a batch is lent to the consumer for the duration of push only: consumers
// never keep or modify it.
type batch[T any] struct {
	header
	data []T
}

func newBatch[T any](capacity int) *batch[T] {
	return &batch[T]{
		header: header{ts: make([]int64, 0, capacity), wm: make([]int64, 0, capacity), watermark: watermark.Min},
		data:   make([]T, 0, capacity),
	}
}

func (b *batch[T]) len() int { return len(b.data) }

func (b *batch[T]) reset() {
	clear(b.data) // drop references held by the records
	b.data = b.data[:0]
	b.ts = b.ts[:0]
	b.wm = b.wm[:0]
	b.idle = false
}

func (b *batch[T]) add(v T, ts, wm int64) {
	b.data = append(b.data, v)
	b.ts = append(b.ts, ts)
	b.wm = append(b.wm, wm)
}

// put appends a zero record with ts and wm and returns it to be filled in
// place: a large record passed by value through calls (a window result,
// 112 bytes for Nexmark q8) was a third of a window firing's CPU.
func (b *batch[T]) put(ts, wm int64) *T {
	var zero T
	b.data = append(b.data, zero)
	b.ts = append(b.ts, ts)
	b.wm = append(b.wm, wm)
	return &b.data[len(b.data)-1]
}

// batchPool recycles batches of one edge: the receiver puts a batch back
// after its chain has processed it.
type batchPool[T any] struct {
	p    sync.Pool
	size int
	// plain: T holds no pointers, so a returned batch need not be cleared
	// (clearing would only write every line of the batch again, on the
	// receiver's core, before the sender refills it on its own).
	plain bool
}

func newBatchPool[T any](size int) *batchPool[T] {
	bp := &batchPool[T]{size: size, plain: hashtable.PointerFree(reflect.TypeFor[T]())}
	bp.p.New = func() any { return newBatch[T](size) }
	return bp
}

func (bp *batchPool[T]) get() *batch[T] {
	b := bp.p.Get().(*batch[T])
	b.watermark = watermark.Min
	return b
}

func (bp *batchPool[T]) put(b *batch[T]) {
	if bp.plain {
		b.data, b.ts, b.wm, b.idle = b.data[:0], b.ts[:0], b.wm[:0], false
		bp.p.Put(b)
		return
	}
	b.reset()
	bp.p.Put(b)
}

// consumer is the input side of an operator in a chain.
type consumer[T any] interface {
	// push processes a batch lent for the duration of the call.
	push(b *batch[T]) error
	// finish is called once, after the final watermark (Max) was pushed, when
	// every input ended.
	finish() error
}

// tee fans one output out to several consumers, in order.
type tee[T any] struct{ outs []consumer[T] }

func (t *tee[T]) push(b *batch[T]) error {
	for _, o := range t.outs {
		if err := o.push(b); err != nil {
			return err
		}
	}
	return nil
}

func (t *tee[T]) finish() error {
	for _, o := range t.outs {
		if err := o.finish(); err != nil {
			return err
		}
	}
	return nil
}

func newTee[T any](outs []any) any {
	if len(outs) == 1 {
		return outs[0]
	}
	t := &tee[T]{}
	for _, o := range outs {
		t.outs = append(t.outs, o.(consumer[T]))
	}
	return consumer[T](t) // zero outputs: a tee that discards
}
