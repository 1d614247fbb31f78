package codec

import (
	"bytes"
	"encoding/gob"
	"fmt"
)

// Marshal encodes v for a snapshot: a StateFile in its binary format,
// anything else with encoding/gob (the fallback: user types need exported
// fields or a GobEncoder/BinaryMarshaler). Reflection here is fine: it
// encodes metadata (source positions, whole state files) and the window
// entries Compact cannot hold, off the per-record path.
func Marshal(v any) ([]byte, error) {
	switch st := v.(type) {
	case StateFile:
		return AppendStateFile(nil, &st), nil
	case *StateFile:
		return AppendStateFile(nil, st), nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, fmt.Errorf("codec: cannot snapshot state of type %T (state types need exported fields or a GobEncoder): %w", v, err)
	}
	return buf.Bytes(), nil
}

// Unmarshal decodes what Marshal encoded (and a StateFile written by gob,
// before its binary format) into the pointer v.
func Unmarshal(data []byte, v any) error {
	if st, ok := v.(*StateFile); ok && len(data) > 0 && data[0] == MagicStateFile {
		return DecodeStateFile(data, st)
	}
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		return fmt.Errorf("codec: cannot restore state of type %T: %w", v, err)
	}
	return nil
}
