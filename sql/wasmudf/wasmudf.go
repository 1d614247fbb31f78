// Package wasmudf runs SQL user-defined functions compiled to WebAssembly,
// in wazero (a WebAssembly runtime in pure Go), so that the `weir sql`
// binary calls functions of a user's own without being recompiled:
//
//	CREATE FUNCTION count_char AS 'udfs/nexmark.wasm' LANGUAGE WASM;
//
// The module exports the SQL function under its name (or the name after
// '#' in the identifier: 'udfs/nexmark.wasm#countChar') with the ABI of
// docs/udf-wasm.md; package guest implements the module's side for Go
// (GOOS=wasip1 GOARCH=wasm).
//
// A module runs sandboxed: no files, no network, no environment, its
// memory bounded (MaxMemoryPages), each call bounded in time
// (Options.CallTimeout). A trap (a panic in a Go module), an error the
// function returns or a call that overruns fails the job with the
// function's name and its arguments, as an exception thrown by a Java
// UDF fails a Flink job. Calls from an operator's subtasks run on a pool
// of instances of the module, one call per instance at a time.
package wasmudf

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// MaxMemoryPages bounds a module instance's memory: 16384 pages of 64 KiB,
// 1 GiB.
const MaxMemoryPages = 16384

// DefaultCallTimeout bounds one call when Options leave it zero.
const DefaultCallTimeout = 10 * time.Second

// Options configure a module's functions.
type Options struct {
	// CallTimeout bounds one call of the module (0: DefaultCallTimeout):
	// a call that has not returned by then is stopped and fails the job.
	CallTimeout time.Duration
}

// The wire tags of the ABI (docs/udf-wasm.md), as package guest has them.
const (
	tagNull   = 0
	tagBool   = 1
	tagInt    = 2
	tagFloat  = 3
	tagString = 4
	tagTable  = 0xFE
	tagError  = 0xFF
)

// Load compiles the module's bytes (or reuses an earlier compilation of
// the same bytes) and returns its SQL function export, a scalar function
// or an aggregate as the module's exports make it. where names the module
// in errors (its path).
func Load(wasm []byte, where, export string, opts Options) (expr.Function, error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	m, err := compile(wasm, where, opts.CallTimeout)
	if err != nil {
		return nil, err
	}
	return m.function(export)
}

// module is a compiled module and its pool of instances.
type module struct {
	where    string
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	timeout  time.Duration

	mu   sync.Mutex
	free []*instance
	// live are the instances not closed, for the watchdog
	live map[*instance]struct{}
}

var modules struct {
	sync.Mutex
	m map[string]*module // by the bytes' content and the timeout
}

func compile(wasm []byte, where string, timeout time.Duration) (*module, error) {
	key := fmt.Sprintf("%x|%d|%s", xxhash.Sum64(wasm), len(wasm), timeout)
	modules.Lock()
	defer modules.Unlock()
	if m := modules.m[key]; m != nil {
		return m, nil
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).WithMemoryLimitPages(MaxMemoryPages))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("%s is not a WebAssembly module weir can run: %w", where, err)
	}
	m := &module{where: where, rt: rt, compiled: compiled, timeout: timeout, live: map[*instance]struct{}{}}
	if modules.m == nil {
		modules.m = map[string]*module{}
	}
	modules.m[key] = m
	go m.watchdog()
	return m, nil
}

// instance is one instantiation of a module: its memory holds one call's
// arguments and result at a time.
type instance struct {
	mod    api.Module
	cancel func()
	ctx    context.Context
	buffer api.Function
	ptr    uint32 // the argument buffer and its capacity
	cap    uint32
	stack  [2]uint64
	enc    []byte
	stderr bytes.Buffer
	// fns caches the exports called: each ExportedFunction call makes a
	// new call engine (a stack of its own)
	fns map[string]api.Function
	// start is when the running call started (UnixNano; 0: idle);
	// overran is set when the watchdog stopped it
	start   atomic.Int64
	overran atomic.Bool
}

func (m *module) get() (*instance, error) {
	m.mu.Lock()
	if n := len(m.free); n > 0 {
		in := m.free[n-1]
		m.free = m.free[:n-1]
		m.mu.Unlock()
		return in, nil
	}
	m.mu.Unlock()
	// calls run under a context that is never done: a cancelable one
	// makes wazero watch it with a goroutine per call; the watchdog closes
	// an overrunning instance's module instead, which stops its call too
	// (WithCloseOnContextDone)
	in := &instance{ctx: context.Background(), cancel: func() {}}
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize").WithStderr(&in.stderr)
	mod, err := m.rt.InstantiateModule(in.ctx, m.compiled, cfg)
	if err != nil {
		in.cancel()
		return nil, fmt.Errorf("%s: instantiating: %w%s", m.where, err, in.stderrTail())
	}
	in.mod = mod
	if in.buffer = mod.ExportedFunction("weir_buffer"); in.buffer == nil {
		mod.Close(in.ctx)
		in.cancel()
		return nil, fmt.Errorf("%s does not export weir_buffer (see docs/udf-wasm.md)", m.where)
	}
	m.mu.Lock()
	m.live[in] = struct{}{}
	m.mu.Unlock()
	return in, nil
}

func (m *module) put(in *instance) {
	m.mu.Lock()
	m.free = append(m.free, in)
	m.mu.Unlock()
}

// discard closes an instance after a failed call: its state is unknown.
func (m *module) discard(in *instance) {
	m.mu.Lock()
	delete(m.live, in)
	m.mu.Unlock()
	in.mod.Close(context.Background())
	in.cancel()
}

// watchdog stops calls that overrun the timeout: closing an instance's
// module makes wazero stop its running call (WithCloseOnContextDone).
func (m *module) watchdog() {
	tick := time.NewTicker(max(m.timeout/8, time.Millisecond))
	defer tick.Stop()
	for range tick.C {
		now := time.Now().UnixNano()
		m.mu.Lock()
		for in := range m.live {
			if s := in.start.Load(); s != 0 && now-s > int64(m.timeout) && !in.overran.Load() {
				in.overran.Store(true)
				go in.mod.CloseWithExitCode(context.Background(), 1)
			}
		}
		m.mu.Unlock()
	}
}

// fn returns the instance's export name.
func (in *instance) fn(name string) api.Function {
	if f, ok := in.fns[name]; ok {
		return f
	}
	if in.fns == nil {
		in.fns = map[string]api.Function{}
	}
	f := in.mod.ExportedFunction(name)
	in.fns[name] = f
	return f
}

func (in *instance) stderrTail() string {
	s := strings.TrimSpace(in.stderr.String())
	if s == "" {
		return ""
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] // a Go panic's first line: "panic: ..."
	}
	return ": " + s
}

// call runs export fn with the encoded arguments in in.enc and returns
// the result's bytes (valid until the next call).
func (m *module) call(in *instance, fn api.Function) ([]byte, error) {
	n := uint32(len(in.enc))
	mem := in.mod.Memory()
	if n > in.cap {
		in.stack[0] = uint64(max(n, 256))
		if err := in.buffer.CallWithStack(in.ctx, in.stack[:]); err != nil {
			return nil, m.failure(in, err)
		}
		in.ptr, in.cap = uint32(in.stack[0]), max(n, 256)
	}
	if !mem.Write(in.ptr, in.enc) {
		return nil, fmt.Errorf("the argument buffer at %d is outside the module's memory", in.ptr)
	}
	in.stack[0] = uint64(n)
	in.start.Store(time.Now().UnixNano())
	err := fn.CallWithStack(in.ctx, in.stack[:])
	in.start.Store(0)
	if err != nil {
		return nil, m.failure(in, err)
	}
	packed := in.stack[0]
	ptr, l := uint32(packed>>32), uint32(packed)
	if l == 0 {
		return nil, errors.New("the function returned no value")
	}
	b, ok := mem.Read(ptr, l)
	if !ok {
		return nil, fmt.Errorf("the result at %d (%d bytes) is outside the module's memory", ptr, l)
	}
	return b, nil
}

func (m *module) failure(in *instance, err error) error {
	if in.overran.Load() {
		return fmt.Errorf("did not return within %s, the limit of a call (SET '%s')", m.timeout, TimeoutKey)
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i] // wazero's first line, without the module's stack
	}
	return fmt.Errorf("the module trapped (%s)%s", msg, in.stderrTail())
}

// TimeoutKey is the session setting of the call timeout (a duration, as
// Flink writes them: '10 s', '500 ms').
const TimeoutKey = "weir.udf.wasm.call-timeout"

// signature reads the export's f_signature.
func (m *module) signature(export string) (args []types.Type, result types.Type, callOnNull bool, err error) {
	in, err := m.get()
	if err != nil {
		return nil, types.Type{}, false, err
	}
	defer m.put(in)
	fn := in.mod.ExportedFunction(export + "_signature")
	if fn == nil {
		return nil, types.Type{}, false, fmt.Errorf("%s exports no %s_signature (see docs/udf-wasm.md)", m.where, export)
	}
	if err := fn.CallWithStack(in.ctx, in.stack[:]); err != nil {
		return nil, types.Type{}, false, fmt.Errorf("%s: %s_signature: %w", m.where, export, err)
	}
	packed := in.stack[0]
	b, ok := in.mod.Memory().Read(uint32(packed>>32), uint32(packed))
	if !ok {
		return nil, types.Type{}, false, fmt.Errorf("%s: %s_signature returned bytes outside its memory", m.where, export)
	}
	sig := string(b)
	args, result, callOnNull, err = parseSignature(sig)
	if err != nil {
		return nil, types.Type{}, false, fmt.Errorf("%s: the signature of %s, %q: %w", m.where, export, sig, err)
	}
	return args, result, callOnNull, nil
}

// parseSignature reads "T1, T2 -> R [CALLED ON NULL INPUT]".
func parseSignature(sig string) ([]types.Type, types.Type, bool, error) {
	s := strings.TrimSpace(sig)
	callOnNull := false
	if rest, ok := strings.CutSuffix(strings.ToUpper(s), "CALLED ON NULL INPUT"); ok {
		s, callOnNull = strings.TrimSpace(s[:len(rest)]), true
	}
	params, res, ok := strings.Cut(s, "->")
	if !ok {
		return nil, types.Type{}, false, errors.New(`want "ARG_TYPE, ... -> RESULT_TYPE"`)
	}
	var args []types.Type
	if p := strings.TrimSpace(params); p != "" {
		for _, a := range splitTypes(p) {
			t, err := parser.ParseType(a)
			if err != nil {
				return nil, types.Type{}, false, err
			}
			if wireTag(t) < 0 {
				return nil, types.Type{}, false, fmt.Errorf("%s is not a type of the ABI", t)
			}
			args = append(args, t)
		}
	}
	res = strings.TrimSpace(res)
	if rest, ok := strings.CutPrefix(strings.ToUpper(res), "TABLE"); ok && strings.HasPrefix(strings.TrimSpace(rest), "<") {
		// a table function: TABLE<name TYPE, ...>, its rows' columns
		rt, err := parser.ParseType("ROW" + strings.TrimSpace(res[len(res)-len(rest):]))
		if err != nil {
			return nil, types.Type{}, false, err
		}
		for _, f := range rt.Fields {
			if wireTag(f.Type) < 0 {
				return nil, types.Type{}, false, fmt.Errorf("column %s: %s is not a type of the ABI", f.Name, f.Type)
			}
		}
		rt.Kind = tableKind
		return args, rt, callOnNull, nil
	}
	rt, err := parser.ParseType(res)
	if err != nil {
		return nil, types.Type{}, false, err
	}
	if wireTag(rt) < 0 {
		return nil, types.Type{}, false, fmt.Errorf("%s is not a type of the ABI", rt)
	}
	return args, rt, callOnNull, nil
}

// tableKind marks a parsed signature's TABLE<...> result (its Fields are
// the columns); it is not a SQL type.
const tableKind = types.Kind(255)

// splitTypes splits at the commas outside parentheses (DECIMAL(10, 2)).
func splitTypes(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(', '<':
			depth++
		case ')', '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// wireTag is the ABI's tag of a SQL type's values, -1 for a type the ABI
// does not carry.
func wireTag(t types.Type) int {
	switch t.Kind {
	case types.Boolean:
		return tagBool
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Date, types.Time,
		types.Timestamp, types.TimestampLTZ, types.Interval:
		return tagInt
	case types.Float, types.Double:
		return tagFloat
	case types.Char, types.Varchar, types.Binary, types.Varbinary, types.Decimal:
		return tagString
	}
	return -1
}

// codec converts between a SQL type's values and the wire.
type codec struct {
	t     types.Type
	tag   int
	toS   func(types.Value) types.Value // DECIMAL to its text
	fromS func(types.Value) types.Value // and back
}

func newCodec(t types.Type) (codec, error) {
	c := codec{t: t, tag: wireTag(t)}
	if t.Kind == types.Decimal {
		var err error
		if c.toS, err = expr.CastFn(t, types.StringType); err != nil {
			return c, err
		}
		if c.fromS, err = expr.CastFn(types.StringType, t); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c codec) append(b []byte, v types.Value) []byte {
	if v.Null {
		return append(b, tagNull)
	}
	switch c.tag {
	case tagBool, tagInt, tagFloat:
		b = append(b, byte(c.tag))
		return binary.LittleEndian.AppendUint64(b, uint64(v.I))
	}
	if c.toS != nil {
		v = c.toS(v)
	}
	b = append(b, tagString)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v.S)))
	return append(b, v.S...)
}

// decode reads a result of the codec's type.
func (c codec) decode(b []byte) (types.Value, error) {
	if len(b) == 0 {
		return types.Value{}, errors.New("an empty result")
	}
	tag := int(b[0])
	b = b[1:]
	switch {
	case tag == tagError:
		msg, err := readString(b)
		if err != nil {
			return types.Value{}, err
		}
		return types.Value{}, errors.New(msg)
	case tag == tagNull:
		return types.NullValue, nil
	case tag != c.tag:
		return types.Value{}, fmt.Errorf("the function returned a value of tag %d for its %s result", tag, c.t)
	case tag == tagString:
		s, err := readString(b)
		if err != nil {
			return types.Value{}, err
		}
		v := types.StringValue(s)
		if c.fromS != nil {
			v = c.fromS(v)
		}
		return v, nil
	}
	if len(b) < 8 {
		return types.Value{}, errors.New("a short result")
	}
	v := types.IntValue(int64(binary.LittleEndian.Uint64(b)))
	if c.t.Kind == types.Float {
		v = types.FloatValue(float64(float32(math.Float64frombits(uint64(v.I)))))
	}
	return v, nil
}

func readString(b []byte) (string, error) {
	if len(b) < 4 || uint32(len(b)-4) < binary.LittleEndian.Uint32(b) {
		return "", errors.New("a short string in the result")
	}
	return string(b[4 : 4+binary.LittleEndian.Uint32(b)]), nil
}

// function builds the SQL function of an export.
func (m *module) function(export string) (expr.Function, error) {
	args, result, callOnNull, err := m.signature(export)
	if err != nil {
		return nil, err
	}
	in, err := m.get()
	if err != nil {
		return nil, err
	}
	has := func(name string) bool { return in.mod.ExportedFunction(name) != nil }
	scalar, acc := has(export), has(export+"_accumulate")
	retract, merge, result_ := has(export+"_retract"), has(export+"_merge"), has(export+"_result")
	m.put(in)
	argCodecs := make([]codec, len(args))
	for i, t := range args {
		if argCodecs[i], err = newCodec(t); err != nil {
			return nil, err
		}
	}
	if result.Kind == tableKind {
		if !scalar {
			return nil, fmt.Errorf("%s exports no %s for its table function", m.where, export)
		}
		return m.tableFunction(export, args, argCodecs, result.Fields, callOnNull)
	}
	res, err := newCodec(result)
	if err != nil {
		return nil, err
	}
	switch {
	case scalar:
		return &expr.ScalarFunction{
			Args: args, Returns: result, CallOnNull: callOnNull,
			Eval: func(a []types.Value) (types.Value, error) {
				return m.value(export, res, nil, argCodecs, a)
			},
		}, nil
	case acc:
		if !result_ {
			return nil, fmt.Errorf("%s exports %s_accumulate but no %s_result", m.where, export, export)
		}
		f := &expr.AggregateFunction{
			Args: args, Returns: result, CallOnNull: callOnNull,
			Accumulate: m.accFn(export+"_accumulate", argCodecs),
			Result: func(acc types.Value) (types.Value, error) {
				return m.value(export+"_result", res, []types.Value{acc}, nil, nil)
			},
		}
		if retract {
			f.Retract = m.accFn(export+"_retract", argCodecs)
		}
		if merge {
			f.Merge = func(acc, other types.Value) (types.Value, error) {
				return m.accumulator(export+"_merge", []types.Value{acc, other}, nil, nil)
			}
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s exports neither %s nor %s_accumulate", m.where, export, export)
}

// An aggregate's accumulator is kept as the bytes of its wire value (in
// S; NULL for a new one), which the module reads back as it wrote them.
func appendAcc(b []byte, acc types.Value) []byte {
	if acc.Null || acc.S == "" {
		return append(b, tagNull)
	}
	return append(b, acc.S...)
}

func (m *module) accFn(name string, codecs []codec) func(acc types.Value, args []types.Value) (types.Value, error) {
	return func(acc types.Value, args []types.Value) (types.Value, error) {
		return m.accumulator(name, []types.Value{acc}, codecs, args)
	}
}

// run calls export name on an instance of the pool with the accumulators
// accs and then args (by codecs) as its arguments, and hands read the
// result's bytes, valid until the instance's next call; a result that is
// an error comes back as the error. A failed call discards the instance,
// whose state is unknown.
func (m *module) run(name string, accs []types.Value, codecs []codec, args []types.Value, read func(out []byte) error) error {
	in, err := m.get()
	if err != nil {
		return err
	}
	b := in.enc[:0]
	for _, a := range accs {
		b = appendAcc(b, a)
	}
	for i, a := range args {
		b = codecs[i].append(b, a)
	}
	in.enc = b
	out, err := m.call(in, in.fn(name))
	if err != nil {
		m.discard(in)
		return err
	}
	defer m.put(in)
	if len(out) > 0 && out[0] == tagError {
		msg, err := readString(out[1:])
		if err != nil {
			return err
		}
		return errors.New(msg)
	}
	return read(out)
}

// value calls name and decodes its result as res.
func (m *module) value(name string, res codec, accs []types.Value, codecs []codec, args []types.Value) (v types.Value, err error) {
	err = m.run(name, accs, codecs, args, func(out []byte) error {
		v, err = res.decode(out)
		return err
	})
	return v, err
}

// accumulator calls name and keeps its result's wire bytes as an
// aggregate's accumulator.
func (m *module) accumulator(name string, accs []types.Value, codecs []codec, args []types.Value) (v types.Value, err error) {
	err = m.run(name, accs, codecs, args, func(out []byte) error {
		v = types.Value{S: string(out)}
		return nil
	})
	return v, err
}

// tableFunction builds a table function export: its result is tag 0xFE, a
// row count (u32) and the rows' values, one per column.
func (m *module) tableFunction(export string, args []types.Type, argCodecs []codec, fields []types.Field, callOnNull bool) (expr.Function, error) {
	cols := make(types.Schema, len(fields))
	codecs := make([]codec, len(fields))
	for i, f := range fields {
		t := f.Type.Nullable()
		cols[i] = types.Field{Name: f.Name, Type: t}
		c, err := newCodec(t)
		if err != nil {
			return nil, err
		}
		codecs[i] = c
	}
	return &expr.TableFunction{
		Args: args, Columns: cols, CallOnNull: callOnNull,
		Eval: func(a []types.Value, emit func([]types.Value)) error {
			return m.run(export, nil, argCodecs, a, func(out []byte) error {
				if len(out) < 5 || out[0] != tagTable {
					return errors.New("a table function's result must begin with tag 0xFE and a row count")
				}
				n := binary.LittleEndian.Uint32(out[1:])
				rest := out[5:]
				row := make([]types.Value, len(codecs))
				for r := range n {
					for j, c := range codecs {
						v, size, err := c.decodeOne(rest)
						if err != nil {
							return fmt.Errorf("row %d, column %s: %w", r, cols[j].Name, err)
						}
						row[j] = v
						rest = rest[size:]
					}
					emit(row)
				}
				return nil
			})
		},
	}, nil
}

// decodeOne reads one value of the codec's type from the front of b and
// returns how many bytes it took.
func (c codec) decodeOne(b []byte) (types.Value, int, error) {
	if len(b) == 0 {
		return types.Value{}, 0, errors.New("a short result")
	}
	switch int(b[0]) {
	case tagNull:
		return types.NullValue, 1, nil
	case tagBool, tagInt, tagFloat:
		if len(b) < 9 {
			return types.Value{}, 0, errors.New("a short result")
		}
		v, err := c.decode(b[:9])
		return v, 9, err
	case tagString:
		if len(b) < 5 {
			return types.Value{}, 0, errors.New("a short result")
		}
		l := int(binary.LittleEndian.Uint32(b[1:]))
		if len(b) < 5+l {
			return types.Value{}, 0, errors.New("a short result")
		}
		v, err := c.decode(b[:5+l])
		return v, 5 + l, err
	}
	return types.Value{}, 0, fmt.Errorf("unknown value tag %d", b[0])
}
