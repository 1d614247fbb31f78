package rowbuf

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// KV maps rows to records with a key and a value, as Flink's Kafka
// connectors do: 'format' or 'value.format' for the value, optionally
// 'key.format' and 'key.fields' (column names separated by ';') for the
// key, 'value.fields-include' = 'ALL' (default: the value holds every
// column) or 'EXCEPT_KEY'. In upsert mode (upsert-kafka) the key is the
// table's primary key, both formats are required, a record without a
// value is a delete of its key, and a -U row writes nothing.
type KV struct {
	n              int
	keyIdx, valIdx []int // columns of the key and of the value, in order
	keyDec, valDec format.Decoder
	keyEnc, valEnc format.Encoder
	upsert         bool
	// Mode is the changelog mode of the rows decoded; Accepts what the
	// encoders accept.
	Mode, Accepts types.ChangelogMode
}

// NewKV reads the key and value options of t; errors are recorded in o.
// source and sink say which directions to compile.
func NewKV(o *connector.Options, t *connector.Table, upsert, source, sink bool) *KV {
	kv := &KV{n: len(t.Schema), upsert: upsert}
	valueKey := "value.format"
	if !upsert && o.Has("format") {
		if o.Has("value.format") {
			o.Errorf("options 'format' and 'value.format' must not both be set")
		}
		valueKey = "format"
	} else if !o.Has("value.format") && !upsert {
		o.Required("format")
		return kv
	}
	var keyFormat string
	if upsert {
		keyFormat = o.Required("key.format")
		if len(t.PrimaryKey) == 0 {
			o.Errorf("an upsert-kafka table needs a PRIMARY KEY (the record key); add PRIMARY KEY (...) NOT ENFORCED")
		}
		if o.Has("key.fields") {
			o.Invalid("key.fields", "an upsert-kafka table's key is its PRIMARY KEY")
		}
		kv.keyIdx = t.PrimaryKey
	} else if keyFormat = o.String("key.format", ""); keyFormat != "" {
		fields := o.Required("key.fields")
		for _, name := range strings.Split(fields, ";") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			i := t.Schema.Index(name)
			if i < 0 {
				o.Invalid("key.fields", "no column '%s' in table '%s'", name, t.Name)
				continue
			}
			kv.keyIdx = append(kv.keyIdx, i)
		}
	} else if o.Has("key.fields") {
		o.Errorf("option 'key.fields' needs 'key.format'")
	}
	include := o.Enum("value.fields-include", "ALL", "ALL", "EXCEPT_KEY")
	inKey := make([]bool, kv.n)
	for _, i := range kv.keyIdx {
		inKey[i] = true
	}
	for i := range t.Schema {
		if include == "ALL" || !inKey[i] {
			kv.valIdx = append(kv.valIdx, i)
		}
	}
	if include == "EXCEPT_KEY" && len(kv.keyIdx) == 0 {
		o.Invalid("value.fields-include", "'EXCEPT_KEY' needs a key ('key.fields' or a PRIMARY KEY)")
	}
	sub := func(idx []int) types.Schema {
		s := make(types.Schema, len(idx))
		for j, i := range idx {
			s[j] = t.Schema[i]
		}
		return s
	}
	keySchema, valSchema := sub(kv.keyIdx), sub(kv.valIdx)
	kv.Mode, kv.Accepts = types.InsertOnly, types.InsertOnly
	if source {
		kv.valDec, kv.Mode = format.NewDecoder(o, valueKey, valSchema)
		if keyFormat != "" {
			kv.keyDec, _ = format.NewDecoder(o, "key.format", keySchema)
		}
	}
	if sink {
		kv.valEnc, kv.Accepts = format.NewEncoder(o, valueKey, valSchema)
		if keyFormat != "" {
			kv.keyEnc, _ = format.NewEncoder(o, "key.format", keySchema)
		}
	}
	if upsert {
		if kv.Mode != types.InsertOnly || kv.Accepts != types.InsertOnly {
			o.Invalid("value.format", "an upsert-kafka value format must be insert-only (json, csv, raw): the record key and its tombstones make the changelog")
		}
		kv.Mode, kv.Accepts = types.Upsert, types.Upsert
	}
	return kv
}

// HasKey reports whether records have keys.
func (kv *KV) HasKey() bool { return len(kv.keyIdx) > 0 }

// Decode decodes a record's key (nil if none) and value (nil for a
// tombstone) into its rows.
func (kv *KV) Decode(key, value []byte) (Decoded, error) {
	if kv.upsert && len(value) == 0 {
		krows, err := kv.keyDec.Decode(key, nil)
		if err != nil || len(krows) != 1 {
			return kv.fail(fmt.Errorf("the key of a tombstone: %v", err))
		}
		vals := make([]types.Value, kv.n)
		for i := range vals {
			vals[i] = types.NullValue
		}
		for j, i := range kv.keyIdx {
			vals[i] = krows[0].Values[j]
		}
		return Decoded{Rows: []types.Row{{Kind: types.Delete, Values: vals}}}, nil
	}
	rows, err := kv.valDec.Decode(value, nil)
	if err != nil {
		return kv.fail(err)
	}
	var krow []types.Value
	if kv.keyDec != nil && len(kv.valIdx) < kv.n {
		krows, err := kv.keyDec.Decode(key, nil)
		if err != nil {
			return kv.fail(fmt.Errorf("key: %w", err))
		}
		if len(krows) != 1 {
			return kv.fail(fmt.Errorf("key: no key"))
		}
		krow = krows[0].Values
	}
	for r := range rows {
		if len(kv.valIdx) < kv.n {
			vals := make([]types.Value, kv.n)
			for j, i := range kv.valIdx {
				vals[i] = rows[r].Values[j]
			}
			for j, i := range kv.keyIdx {
				vals[i] = krow[j]
			}
			rows[r].Values = vals
		}
		if kv.upsert {
			rows[r].Kind = types.UpdateAfter
		}
	}
	return Decoded{Rows: rows}, nil
}

// fail: a record the format skips is a skipped record; others are errors.
func (kv *KV) fail(err error) (Decoded, error) {
	var skip *format.SkipError
	if errors.As(err, &skip) {
		return Decoded{Skipped: true}, nil
	}
	return Decoded{}, err
}

// Encode appends a row's key and value to key and value. tombstone: the
// record has no value (an upsert's delete); skip: no record at all (an
// upsert's -U).
func (kv *KV) Encode(row *types.Row, key, value []byte) (k, v []byte, tombstone, skip bool, err error) {
	if kv.upsert && row.Kind == types.UpdateBefore {
		return key, value, false, true, nil
	}
	if kv.keyEnc != nil {
		kr := types.Row{Kind: types.Insert, Values: project(row.Values, kv.keyIdx)}
		if key, _, err = kv.keyEnc.Encode(key, &kr); err != nil {
			return key, value, false, false, fmt.Errorf("key: %w", err)
		}
	}
	if kv.upsert && row.Kind == types.Delete {
		return key, value, true, false, nil
	}
	vr := *row
	if len(kv.valIdx) < kv.n {
		vr.Values = project(row.Values, kv.valIdx)
	}
	if kv.upsert {
		vr.Kind = types.Insert
	}
	value, skip, err = kv.valEnc.Encode(value, &vr)
	return key, value, false, skip, err
}

func project(vals []types.Value, idx []int) []types.Value {
	out := make([]types.Value, len(idx))
	for j, i := range idx {
		out[j] = vals[i]
	}
	return out
}
