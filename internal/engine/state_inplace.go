package engine

import "github.com/weirstream/weir/internal/state"

// ValuesInPlace reports whether the values of this operator's keyed state
// live in memory as they are (the HeapState backend): a ValueState then
// returns the stored value itself, so a pointer value changed in place
// needs no Update. With PebbleState values are copies and every change
// needs Update. Call it from Open. Operators built on Process (package
// cep) use it to skip a hash lookup per record.
func (rc *RuntimeContext[K]) ValuesInPlace() bool {
	_, ok := rc.backend.(*state.Heap)
	return ok
}
