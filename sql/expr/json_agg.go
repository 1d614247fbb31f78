package expr

import (
	"fmt"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// JSON_ARRAYAGG(value [NULL | ABSENT ON NULL]) and JSON_OBJECTAGG([KEY] key
// VALUE value [NULL | ABSENT ON NULL]), as Flink's JsonArrayAggFunction and
// JsonObjectAggFunction: each value is kept as its JSON text (Flink wraps
// the argument in JSON_STRING, so a string is quoted; a JSON_OBJECT or
// JSON_ARRAY call goes in as JSON). The array is in arrival order, a
// retraction removing the value's earliest occurrence; the object's members
// are written sorted by key, and a key given twice fails the job (Flink:
// "Duplicate keys are not allowed in JSON_OBJECTAGG"), even when the second
// value is an absent NULL; a retraction removes the key with its value. The
// default is ABSENT ON NULL for the array and NULL ON NULL for the object;
// the result is never NULL ("[]" or "{}" when every value was absent).
//
// The accumulator is one slot: a list of JSON texts (the array), or of
// key, text pairs in arrival order (the object).

func isJSONAgg(k AggKind) bool { return k == aggJSONArray || k == aggJSONObject }

// compileJSONAgg compiles the JSON aggregates; ok is false for other names.
// Its argument is the value's JSON text ("null" under NULL ON NULL, NULL
// when absent) or, for the object, the pair (key, text).
func compileJSONAgg(a *AggCall, c *parser.Call, ec *Compiler) (*AggCall, bool, error) {
	kind, args := aggJSONArray, 2
	switch c.Name {
	case "JSON_ARRAYAGG":
	case "JSON_OBJECTAGG":
		kind, args = aggJSONObject, 3
	default:
		return nil, false, nil
	}
	if c.Star || c.Distinct {
		return nil, true, ErrAt(c, "%s takes no * or DISTINCT", c.Name)
	}
	if len(c.Args) != args {
		return nil, true, ErrAt(c, "%s: malformed call (its clauses are missing)", c.Name)
	}
	xs, err := ec.compileAll(c.Args...)
	if err != nil {
		return nil, true, err
	}
	onNull, err := jsonClause(c, xs, 0)
	if err != nil {
		return nil, true, err
	}
	keepNull := onNull == "NULL"
	vi := args - 1
	w, err := jsonArgWriter(c.Args[vi], xs[vi])
	if err != nil {
		return nil, true, err
	}
	val := xs[vi].Eval
	text := func(r []types.Value) types.Value {
		v := val(r)
		switch {
		case !v.Null:
			return types.StringValue(string(w(nil, v)))
		case keepNull:
			return types.StringValue("null")
		}
		return types.NullValue
	}
	a.Kind, a.ArgT = kind, types.StringType
	a.OutT = types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: true}
	if kind == aggJSONArray {
		a.Arg = text
		return a, true, nil
	}
	k := xs[1]
	if !k.Type.IsString() {
		return nil, true, ErrAt(c.Args[1], "the key of JSON_OBJECTAGG must be a string, not %s", k.Type)
	}
	key := k.Eval
	a.Arg = func(r []types.Value) types.Value {
		kv := key(r)
		if kv.Null {
			panic(runtimeError("JSON_OBJECTAGG: a key is NULL"))
		}
		return types.ListValue([]types.Value{types.StringValue(kv.S), text(r)})
	}
	return a, true, nil
}

// accumulateJSON adds (sign 1) or retracts (sign -1) an argument.
func (a *AggCall) accumulateJSON(acc []types.Value, v types.Value, sign int64) {
	s := a.slot
	l := acc[s].List()
	if a.Kind == aggJSONArray {
		if sign > 0 {
			acc[s] = types.ListValue(append(l, v))
			return
		}
		for i := range l {
			if l[i].S == v.S {
				acc[s] = types.ListValue(removeAt(l, i, 1))
				return
			}
		}
		return // retracting a value that is not there
	}
	pair := v.List()
	key, text := pair[0].S, pair[1]
	if sign > 0 {
		jsonKeyAbsent(l, key)
		if !text.Null {
			acc[s] = types.ListValue(append(l, pair[0], text))
		}
		return
	}
	for i := 0; i+1 < len(l); i += 2 {
		if l[i].S == key && !text.Null && l[i+1].S == text.S {
			acc[s] = types.ListValue(removeAt(l, i, 2))
			return
		}
	}
}

// jsonKeyAbsent fails the job when the pairs have the key.
func jsonKeyAbsent(pairs []types.Value, key string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i].S == key {
			panic(runtimeError(fmt.Sprintf("JSON_OBJECTAGG: key '%s' is already present; duplicate keys are not allowed in JSON_OBJECTAGG", key)))
		}
	}
}

// removeAt removes l[i:i+n] in place.
func removeAt(l []types.Value, i, n int) []types.Value {
	copy(l[i:], l[i+n:])
	for j := len(l) - n; j < len(l); j++ {
		l[j] = types.Value{}
	}
	return l[:len(l)-n]
}

// mergeJSON folds src into dst (window slices, sessions): src's values
// after dst's.
func (a *AggCall) mergeJSON(dst, src []types.Value) {
	s := a.slot
	l := dst[s].List()
	if a.Kind == aggJSONObject {
		sl := src[s].List()
		for i := 0; i+1 < len(sl); i += 2 {
			jsonKeyAbsent(l, sl[i].S)
		}
	}
	dst[s] = types.ListValue(append(l, src[s].List()...))
}

// resultJSON writes the array or the object.
func (a *AggCall) resultJSON(acc []types.Value) types.Value {
	l := acc[a.slot].List()
	if a.Kind == aggJSONArray {
		b := []byte{'['}
		for i, v := range l {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, v.S...)
		}
		return types.StringValue(string(append(b, ']')))
	}
	entries := make([]jsonEntry, 0, len(l)/2)
	for i := 0; i+1 < len(l); i += 2 {
		entries = append(entries, jsonEntry{key: l[i].S, val: l[i+1].S})
	}
	return types.StringValue(string(appendJSONEntries(nil, entries)))
}
