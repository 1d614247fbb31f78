package codec

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

// StateFile is the state of one operator subtask, the content of a state
// file of a checkpoint. Keyed operators fill Groups (by key group, so that
// a restore at another parallelism can pick its key groups); others fill
// Meta. The field names are part of the format: state files written
// before the binary format are gob streams of this struct.
type StateFile struct {
	UID         string
	Name        string
	Subtask     int
	Parallelism int
	Watermark   int64
	Groups      map[int][]byte
	Meta        map[string][]byte
}

// AppendStateFile appends the binary encoding of st: MagicStateFile,
// Version, UID, name, subtask, parallelism, watermark, then the key groups
// and the meta map (each: 0 for nil, else 1+count, then key and
// length-prefixed value, in key order). The group data is copied once,
// into a buffer of exact size when dst has no room.
func AppendStateFile(dst []byte, st *StateFile) []byte {
	size := 2 + 5*binary.MaxVarintLen64 + len(st.UID) + len(st.Name) + 2*binary.MaxVarintLen64
	for _, v := range st.Groups {
		size += 2*binary.MaxVarintLen64 + len(v)
	}
	for k, v := range st.Meta {
		size += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	w := appendWriter(slices.Grow(dst, size))
	_ = WriteStateFile(&w, st) // appending to a slice does not fail
	return w
}

// appendWriter is an io.Writer that appends to a byte slice: AppendStateFile
// is WriteStateFile into memory, so the two cannot drift apart.
type appendWriter []byte

func (w *appendWriter) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}

// WriteStateFile writes the bytes AppendStateFile would append to an empty
// buffer, without building that buffer: the header, then each key group's
// and meta value's bytes passed to w as they are. A window operator's state
// file is its whole state (hundreds of MB for Nexmark q8): a buffer of
// that size, fresh at every checkpoint, would cost the coordinator more
// CPU zeroing and faulting in its pages than encoding the state does, and
// the garbage collector a cycle, competing with the tasks for the cores.
func WriteStateFile(w io.Writer, st *StateFile) error {
	var hdr []byte
	flush := func(data []byte) error {
		if len(hdr) > 0 {
			if _, err := w.Write(hdr); err != nil {
				return err
			}
			hdr = hdr[:0]
		}
		if len(data) > 0 {
			if _, err := w.Write(data); err != nil {
				return err
			}
		}
		return nil
	}
	hdr = append(hdr, MagicStateFile, Version)
	hdr = AppendBytes(hdr, []byte(st.UID))
	hdr = AppendBytes(hdr, []byte(st.Name))
	hdr = binary.AppendVarint(hdr, int64(st.Subtask))
	hdr = binary.AppendVarint(hdr, int64(st.Parallelism))
	hdr = binary.AppendVarint(hdr, st.Watermark)
	if st.Groups == nil {
		hdr = append(hdr, 0)
	} else {
		hdr = binary.AppendUvarint(hdr, uint64(len(st.Groups))+1)
		kgs := make([]int, 0, len(st.Groups))
		for kg := range st.Groups {
			kgs = append(kgs, kg)
		}
		slices.Sort(kgs)
		for _, kg := range kgs {
			v := st.Groups[kg]
			hdr = binary.AppendVarint(hdr, int64(kg))
			hdr = binary.AppendUvarint(hdr, uint64(len(v)))
			if len(v) < 4096 {
				hdr = append(hdr, v...) // small: one write with its neighbours
			} else if err := flush(v); err != nil {
				return err
			}
		}
	}
	if st.Meta == nil {
		hdr = append(hdr, 0)
	} else {
		hdr = binary.AppendUvarint(hdr, uint64(len(st.Meta))+1)
		keys := make([]string, 0, len(st.Meta))
		for k := range st.Meta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			hdr = AppendBytes(hdr, []byte(k))
			v := st.Meta[k]
			hdr = binary.AppendUvarint(hdr, uint64(len(v)))
			if len(v) < 4096 {
				hdr = append(hdr, v...)
			} else if err := flush(v); err != nil {
				return err
			}
		}
	}
	return flush(nil)
}

// DecodeStateFile reads a state file written by AppendStateFile; data
// begins with MagicStateFile. The groups and meta values alias data.
func DecodeStateFile(data []byte, st *StateFile) error {
	if len(data) < 2 || data[0] != MagicStateFile {
		return fmt.Errorf("codec: state file: %w", ErrCorrupt)
	}
	if data[1] != Version {
		return fmt.Errorf("codec: state file of format version %d: this weir reads version %d and gob (restore with a newer weir)", data[1], Version)
	}
	r := NewReader(data[2:])
	*st = StateFile{}
	st.UID = string(r.Bytes(r.Uvarint()))
	st.Name = string(r.Bytes(r.Uvarint()))
	st.Subtask = int(r.Varint())
	st.Parallelism = int(r.Varint())
	st.Watermark = r.Varint()
	// A key group takes 2 bytes at least (number, length), so does a meta
	// entry (key length, value length).
	if n := r.Uvarint(); n > 0 && r.Err() == nil {
		if n-1 > uint64(r.Len()/2) {
			return fmt.Errorf("codec: state file: %d key groups in %d bytes: %w", n-1, r.Len(), ErrCorrupt)
		}
		st.Groups = make(map[int][]byte, n-1)
		for range n - 1 {
			kg := int(r.Varint())
			st.Groups[kg] = r.Bytes(r.Uvarint())
		}
	}
	if n := r.Uvarint(); n > 0 && r.Err() == nil {
		if n-1 > uint64(r.Len()/2) {
			return fmt.Errorf("codec: state file: %d meta entries in %d bytes: %w", n-1, r.Len(), ErrCorrupt)
		}
		st.Meta = make(map[string][]byte, n-1)
		for range n - 1 {
			k := string(r.Bytes(r.Uvarint()))
			st.Meta[k] = r.Bytes(r.Uvarint())
		}
	}
	if r.Err() != nil {
		return fmt.Errorf("codec: state file truncated at byte %d: %w", len(data)-r.Len(), r.Err())
	}
	if r.Len() != 0 {
		return fmt.Errorf("codec: state file: %d bytes after its end: %w", r.Len(), ErrCorrupt)
	}
	return nil
}
