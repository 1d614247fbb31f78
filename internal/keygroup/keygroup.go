// Package keygroup maps keys to key groups and key groups to subtasks.
//
// A key group is the unit in which keyed state is stored and moved: key group
// = hash(key) mod maxParallelism, subtask = keyGroup * parallelism /
// maxParallelism (Flink's KeyGroupRangeAssignment). The hash must be the same
// in every process and every run, so a savepoint taken by one process can be
// restored by another at a different parallelism: Go's maphash is seeded per
// process and cannot be used. Strings hash with xxhash64, fixed-size values
// with the splitmix64 finalizer.
package keygroup

import (
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// DefaultMaxParallelism is the default number of key groups (Flink's default
// for small jobs is 128 as well).
const DefaultMaxParallelism = 128

// Mix64 is the splitmix64 finalizer: a fast bijective scrambler for 64-bit
// values.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Of returns the key group of a key hash.
func Of(hash uint64, maxParallelism int) int {
	return int(hash % uint64(maxParallelism))
}

// Subtask returns the subtask that owns key group kg.
func Subtask(kg, parallelism, maxParallelism int) int {
	return kg * parallelism / maxParallelism
}

// Range returns the key groups [start, end) owned by subtask i.
func Range(i, parallelism, maxParallelism int) (start, end int) {
	// Inverse of Subtask: the smallest kg with kg*p/max >= i.
	start = (i*maxParallelism + parallelism - 1) / parallelism
	end = ((i+1)*maxParallelism + parallelism - 1) / parallelism
	return start, end
}

// Word64 is the hash Hasher gives an 8-byte integer key (int, int64, uint,
// uint64, uintptr) with bits x. The partitioner calls it directly for such
// keys (no call through a function value per record); IsWord64 says when.
func Word64(x uint64) uint64 { return Mix64(x + 0x9e3779b97f4a7c15) }

// IsWord64 reports whether Hasher[K] hashes a key as Word64 of its 8 bytes.
func IsWord64[K comparable]() bool {
	switch t := reflect.TypeFor[K](); t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return t.Size() == 8
	}
	return false
}

// Hasher returns a stable hash function for values of type K. It inspects K
// once, by reflection, and returns a function that does no reflection and no
// allocation per call. Supported: booleans, integers, floats, strings, arrays
// and structs of those. Other types (pointers, interfaces, channels) have no
// stable value to hash across processes and are rejected.
func Hasher[K comparable]() (func(K) uint64, error) {
	t := reflect.TypeFor[K]()
	switch t.Kind() {
	case reflect.String:
		return func(k K) uint64 {
			return xxhash.Sum64String(*(*string)(unsafe.Pointer(&k)))
		}, nil
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return func(k K) uint64 { return Word64(*(*uint64)(unsafe.Pointer(&k))) }, nil
	case reflect.Int32, reflect.Uint32:
		return func(k K) uint64 { return Mix64(uint64(*(*uint32)(unsafe.Pointer(&k))) + 0x9e3779b97f4a7c15) }, nil
	case reflect.Int16, reflect.Uint16:
		return func(k K) uint64 { return Mix64(uint64(*(*uint16)(unsafe.Pointer(&k))) + 0x9e3779b97f4a7c15) }, nil
	case reflect.Int8, reflect.Uint8, reflect.Bool:
		return func(k K) uint64 { return Mix64(uint64(*(*uint8)(unsafe.Pointer(&k))) + 0x9e3779b97f4a7c15) }, nil
	}
	parts, err := plan(t, 0)
	if err != nil {
		return nil, err
	}
	return func(k K) uint64 {
		p := unsafe.Pointer(&k)
		h := uint64(0x9e3779b97f4a7c15)
		for i := range parts {
			h = Mix64(h ^ parts[i].hash(p))
		}
		return h
	}, nil
}

// part hashes one scalar field of a composite key at a fixed offset.
type part struct {
	off  uintptr
	kind reflect.Kind
	size uintptr
}

func (f *part) hash(base unsafe.Pointer) uint64 {
	p := unsafe.Add(base, f.off)
	switch f.kind {
	case reflect.String:
		return xxhash.Sum64String(*(*string)(p))
	case reflect.Float32:
		v := *(*float32)(p)
		if v == 0 { // +0 and -0 are equal keys
			return 0
		}
		return uint64(math.Float32bits(v))
	case reflect.Float64:
		v := *(*float64)(p)
		if v == 0 {
			return 0
		}
		return math.Float64bits(v)
	}
	switch f.size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	default:
		return *(*uint64)(p)
	}
}

func plan(t reflect.Type, off uintptr) ([]part, error) {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return []part{{off: off, kind: t.Kind(), size: t.Size()}}, nil
	case reflect.Array:
		var out []part
		for i := 0; i < t.Len(); i++ {
			p, err := plan(t.Elem(), off+uintptr(i)*t.Elem().Size())
			if err != nil {
				return nil, err
			}
			out = append(out, p...)
		}
		return out, nil
	case reflect.Struct:
		var out []part
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Name == "_" {
				continue
			}
			p, err := plan(f.Type, off+f.Offset)
			if err != nil {
				return nil, err
			}
			out = append(out, p...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("keygroup: key type %s has no stable hash (use strings, numbers, arrays or structs of them)", t)
}
