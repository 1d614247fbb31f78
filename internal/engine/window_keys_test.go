package engine

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/watermark"
)

// keyCountOp is a window of w counting int64 events of int64 keys under
// trig, rendering "key@start=count" rows into out; its processing time is
// *now.
func keyCountOp(w Windows, trig WindowTrigger, now *int64, out consumer[string]) *genWindowOp[int64, int64, int64, int64, string] {
	return countWindowOp(w, trig, func() int64 { return *now }, out, func(emit func(string), key int64, w *gwin[int64, int64], kind ChangeKind, v int64) error {
		emit(strconv.FormatInt(key, 10) + "@" + strconv.FormatInt(w.start, 10) + "=" + strconv.FormatInt(v, 10))
		return nil
	})
}

// A key whose last window went gives its arena slot to the next new key,
// while a timer of the old key's window is still queued: a processing-time
// trigger purges a tumbling window when it fires, and the window's
// event-time cleanup timer stays in its queue. That timer must not act on
// the key now in the slot (before the arena, it pointed to the old key's
// own object, marked gone). Acting on it fired and removed the new key's
// window at the old window's cleanup and gave the slot back twice, so that
// two later keys shared one state.
func TestWindowKeySlotReusedUnderStaleTimer(t *testing.T) {
	sink := &collectSink[string]{}
	var now int64
	op := keyCountOp(Tumbling(10*time.Millisecond), ProcessingTimeTrigger(), &now, sink)
	push := func(wm, ts int64, keys ...int64) {
		t.Helper()
		in := newBatch[keyed[int64, int64]](len(keys))
		for _, k := range keys {
			in.add(keyed[int64, int64]{hash: uint64(k) * 0x9E3779B97F4A7C15, key: k, val: k}, ts, watermark.Min)
		}
		in.watermark = wm
		if err := op.push(in); err != nil {
			t.Fatal(err)
		}
	}
	push(watermark.Min, 5, 1) // key 1, window [0, 10): slot 0
	now = 9
	if err := op.onProcessingTime(now); err != nil { // fires and purges key 1's window: slot 0 free
		t.Fatal(err)
	}
	if n := op.arena.len(); n != 0 {
		t.Fatalf("%d keys in the arena after the purge, want 0", n)
	}
	push(watermark.Min, 6, 2, 2) // key 2 takes slot 0, a window [0, 10) queued beside key 1's
	push(9, 7)                   // the cleanup of [0, 10): key 2's pending events fire once
	push(watermark.Min, 15, 3, 4, 4)
	push(19, 17) // keys 3 and 4 in [10, 20), in slots of their own
	want := []string{"1@0=1", "2@0=2", "3@10=1", "4@10=2"}
	got := slices.Clone(sink.got)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if n, free := op.arena.len(), len(op.arena.free); n != 0 || free != int(op.arena.n) {
		t.Fatalf("arena: %d keys, %d free slots of %d, want 0 keys and every slot free once", n, free, op.arena.n)
	}
}

// The structures that name every open key hold no pointer when the key
// type holds none: the hash table's values, the event-time heap's entries
// and a deferred snapshot's list are arena slots, and the arena's chunks
// are of pointer-free states (Nexmark q11). The garbage collector then
// reads none of them.
func TestWindowKeyIndexesHaveNoPointers(t *testing.T) {
	op := sessionCountOp(time.Second, &discardSink[int64]{})
	for name, typ := range map[string]reflect.Type{
		"heap entry":    reflect.TypeOf(op.etimers).Field(0).Type.Elem(),
		"snapshot list": reflect.TypeOf(op.snapKeys).Elem(),
		"arena state":   reflect.TypeOf(op.arena.chunks).Elem().Elem(),
		"table slot":    reflect.TypeOf(*op.keys).FieldByIndex([]int{1}).Type.Elem(),
	} {
		if p := pointerPath(typ, name); p != "" {
			t.Errorf("%s holds a pointer at %s", name, p)
		}
	}
}

// Sessions that open and close by the thousand keep the arena at the
// number of keys open at once: a key that went leaves its slot to the next.
func TestWindowKeySlotsReused(t *testing.T) {
	op := sessionCountOp(10*time.Millisecond, &discardSink[int64]{})
	const keys = 3000
	in := newBatch[keyed[int64, int64]](keys)
	for round := int64(0); round < 20; round++ {
		in.reset()
		base := round * 1000
		for k := int64(0); k < keys; k++ {
			key := round*keys + k // new keys every round
			in.add(keyed[int64, int64]{hash: uint64(key) * 0x9E3779B97F4A7C15, key: key, val: key}, base, watermark.Min)
		}
		in.watermark = base - 1 // closes the last round's sessions
		if err := op.push(in); err != nil {
			t.Fatal(err)
		}
		if n := op.arena.len(); n != keys {
			t.Fatalf("round %d: %d keys in the arena, want %d", round, n, keys)
		}
	}
	if int(op.arena.n) > 2*keys {
		t.Errorf("%d slots for at most %d keys open at once", op.arena.n, 2*keys)
	}
}
