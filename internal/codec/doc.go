// Package codec is weir's one state encoding: how snapshots, state files
// and the entries of serializing state backends turn values into bytes
// and back.
//
// A Codec is built once per Go type by reflection (Build, or the cached
// For) and then works on unsafe pointers with no reflection per value,
// except to allocate slices on decode and to walk maps (a map is reached
// only through reflect). It comes in three
// flavours of one builder, because the three uses need different bytes:
//
//   - Key: canonical and order-preserving (fixed-width big-endian
//     integers, ordered floats, strings as a 4-byte length and bytes), for
//     stream keys, namespaces and map keys of keyed state, so that a sorted
//     store iterates numbers in order and a key's parts are prefix-free.
//   - Value: any type without interfaces, channels or functions, fields
//     exported or not, BinaryMarshalers by their methods; for the values of
//     keyed state (internal/state).
//   - Compact: plain data only (booleans, numbers, strings, and slices,
//     arrays and structs of them, every field exported), integers as
//     varints; for the entries of window snapshots (GroupWriter), whose
//     type description (field names included) lets a changed type restore
//     as gob would restore it.
//
// encoding/gob is the documented fallback for what the compact flavour
// cannot hold (maps, pointers, interfaces, unexported fields, a
// GobEncoder): GroupWriter and EachEntry pick it per type, Marshal and
// Unmarshal use it for operator metadata (source positions), and every
// reader still reads the gob snapshots written before the binary formats.
//
// State files (StateFile) have a format of their own, versioned like the
// group format: see statefile.go.
//
// Every decoder returns an error on arbitrary bytes, never panics, and
// allocates no more than the input can hold: a claimed length is checked
// against the bytes that remain before anything is allocated.
package codec
