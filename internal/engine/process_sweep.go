package engine

import (
	"iter"
	"time"
)

// WatermarkHandler is implemented by process functions that act when the
// watermark advances rather than through a timer per key: an operator that
// keeps its own index of which keys have work at which time (package cep
// sweeps the keys whose buffered events the watermark passed) saves the
// timer queue's per-key registration, deduplication and heap. OnWatermark
// runs after the event-time timers due at wm have fired, with no current
// key: it returns to a key with KeyedContext.SetKey. Records it emits
// carry the previous watermark, as those of timers do.
//
// An index kept this way is not in checkpoints: rebuild it from keyed
// state (ValueState.Entries) after a restore.
type WatermarkHandler[K comparable, OUT any] interface {
	OnWatermark(ctx *KeyedContext[K, OUT], wm time.Time) error
}

// BatchEndHandler is implemented by process functions that work on the
// records of an input batch together: EndBatch runs after the last record
// of each batch the operator receives, before the batch's watermark
// advances and before any checkpoint barrier after it, with no current key
// (SetKey returns to one). A mini-batch aggregation buffers a batch's
// records per key in ProcessElement and folds each key's records into its
// state in EndBatch, emitting one change per key instead of one per record
// (Flink's table.exec.mini-batch); what it buffers is never in a
// checkpoint, as EndBatch has emptied it by then.
type BatchEndHandler[K comparable, OUT any] interface {
	EndBatch(ctx *KeyedContext[K, OUT]) error
}

// KeyRef is a key with its hash, as the operator received it: what it
// takes to return to the key later (KeyedContext.SetKey) without hashing
// it again.
type KeyRef[K comparable] struct {
	key  K
	hash uint64
}

// Key is the key.
func (r KeyRef[K]) Key() K { return r.key }

// KeyRef is the current key, to return to later with SetKey.
func (c *KeyedContext[K, OUT]) KeyRef() KeyRef[K] { return KeyRef[K]{c.op.cur.key, c.op.cur.hash} }

// SetKey makes r the current key, for state handles and Key, and ts the
// timestamp of the records emitted next. It is for WatermarkHandler, which
// visits the keys it indexed; r must come from KeyRef or
// ValueState.Entries of this operator.
func (c *KeyedContext[K, OUT]) SetKey(r KeyRef[K], ts time.Time) {
	c.op.cur.key, c.op.cur.hash = r.key, r.hash
	c.op.curTS = ts.UnixMilli()
}

// Entries iterates over every key of this subtask that has a value, with
// the value, by key group. Changing the state during the iteration is not
// allowed; collect the keys first.
func (s *ValueState[K, V]) Entries() iter.Seq2[KeyRef[K], V] {
	return func(yield func(KeyRef[K], V) bool) {
		for kg := s.groups.Start; kg < s.groups.End; kg++ {
			for e := range s.st.Entries(kg) {
				if !yield(KeyRef[K]{e.Key, e.Hash}, e.Value) {
					return
				}
			}
		}
	}
}

// onWatermark calls the function's OnWatermark after the timers due at w
// fired.
func (op *processOp[K, T, OUT]) onWatermark(w, prev int64) error {
	if op.onWM == nil {
		return nil
	}
	op.nowOK = false
	op.emitWM = prev
	err := op.onWM.OnWatermark(op.ctx, time.UnixMilli(w).UTC())
	op.cur = currentKey[K]{}
	if err == nil {
		err = op.emitErr
	}
	return err
}
