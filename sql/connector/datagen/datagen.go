// Package datagen is the SQL connector 'datagen', with Flink's options:
// a source of generated rows for trying queries out and for tests.
//
// Options: 'rows-per-second' (default 10000, over all the source's
// splits; paced in wall-clock time), 'number-of-rows' (the source is
// bounded when it is set or when a column is a sequence), and per column
// NAME:
//
//   - 'fields.NAME.kind' = 'random' (default) or 'sequence';
//   - random: 'fields.NAME.min' and 'fields.NAME.max' for numbers
//     (default: the type's range; DOUBLE and FLOAT: Flink's defaults, the
//     smallest positive value to the largest), 'fields.NAME.length' for
//     strings, bytes (default 100, at most the declared length and 16 Mi),
//     arrays, multisets and maps (default 3, at most 1 Mi elements; weir's
//     bounds, refused with an error), 'fields.NAME.max-past' for
//     TIMESTAMP, TIMESTAMP_LTZ, DATE and TIME (a duration: values are the
//     row's time minus up to that much; default 0; row k's time is the
//     source's start plus k / rows-per-second, when the pacing emits it,
//     as Flink's are the current time, so event-time windows fire),
//     'fields.NAME.null-rate' (0 to 1, default 0);
//   - sequence (integers, DECIMAL, DOUBLE, FLOAT, strings):
//     'fields.NAME.start' and 'fields.NAME.end' (both required) — row k
//     has start + k, and the source ends after end.
//
// Nested ROWs are generated with the defaults. Unlike Flink's, the random
// values are deterministic: row k's values are a function of the table's
// seed ('seed', a weir extension; by default derived from the table's
// name), the column and k only, whatever the parallelism and restarts.
// Strings are lowercase hexadecimal, as Flink's. The source has one split
// per unit of the job's parallelism (split i makes rows i, i+p, i+2p...)
// and is restorable.
package datagen

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func init() { connector.Register(Factory{}) }

// Factory is the 'datagen' connector.
type Factory struct{}

// Identifier implements connector.Factory.
func (Factory) Identifier() string { return "datagen" }

// gen writes the value of a column for row k with the random stream r.
type gen func(k int64, r *rng, v *types.Value)

// CreateSource implements connector.SourceFactory.
func (Factory) CreateSource(t *connector.Table) (*connector.Source, error) {
	o := connector.NewOptions(t)
	rate := o.Int("rows-per-second", 10000)
	if rate <= 0 {
		o.Invalid("rows-per-second", "must be positive")
	}
	rows := o.Int("number-of-rows", -1)
	if o.Has("number-of-rows") && rows < 0 {
		o.Invalid("number-of-rows", "must not be negative")
	}
	h := fnv.New64a()
	h.Write([]byte(t.Name))
	seed := uint64(o.Int("seed", int64(h.Sum64()>>1)))
	// Row k's time is when the pacing emits it: the source's start plus
	// k / rows-per-second, as Flink's datagen gives a TIMESTAMP column the
	// current time (so event-time windows over it fire); a function of k,
	// so the same on every split.
	start, rps := time.Now().UnixMicro(), max(rate, 1)
	at := func(k int64) int64 { return start + k/rps*1_000_000 + k%rps*1_000_000/rps }
	gens := make([]gen, len(t.Schema))
	for i, col := range t.Schema {
		g, seqLen := column(o, col, at)
		gens[i] = g
		if seqLen >= 0 && (rows < 0 || seqLen < rows) {
			rows = seqLen
		}
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	src := &source{gens: gens, rows: rows, rate: float64(rate), seed: seed, splits: t.Settings.ParallelismOrOne()}
	return &connector.Source{Source: src, Bounded: rows >= 0, Changelog: types.InsertOnly}, nil
}

// The longest generated string or byte string (16 MiB) and collection
// (1 Mi elements): a longer one would be allocated for every row.
const (
	maxStringLength     = 1 << 24
	maxCollectionLength = 1 << 20
)

// column compiles the generator of a column; seqLen is the length of a
// sequence (-1 for random values).
func column(o *connector.Options, col types.Field, at func(k int64) int64) (gen, int64) {
	key := func(s string) string { return "fields." + col.Name + "." + s }
	kind := o.Enum(key("kind"), "random", "random", "sequence")
	if kind == "sequence" {
		return sequence(o, col, key)
	}
	g := random(o, col.Type, key, at, true)
	if rate := o.Float(key("null-rate"), 0); rate > 0 {
		if rate > 1 {
			o.Invalid(key("null-rate"), "must be between 0 and 1")
		}
		inner := g
		g = func(k int64, r *rng, v *types.Value) {
			if r.float() < rate {
				*v = types.NullValue
				return
			}
			inner(k, r, v)
		}
	}
	return g, -1
}

func sequence(o *connector.Options, col types.Field, key func(string) string) (gen, int64) {
	startS, endS := o.Required(key("start")), o.Required(key("end"))
	if startS == "" || endS == "" {
		return nil, -1
	}
	t := col.Type
	switch {
	case t.IsInteger(), t.IsString():
		start, err1 := strconv.ParseInt(strings.TrimSpace(startS), 10, 64)
		end, err2 := strconv.ParseInt(strings.TrimSpace(endS), 10, 64)
		if err1 != nil || err2 != nil {
			o.Invalid(key("start"), "a sequence of %s needs integer start and end", t)
			return nil, -1
		}
		if end < start {
			o.Invalid(key("end"), "is below 'fields.%s.start' (%d)", col.Name, start)
			return nil, -1
		}
		if t.IsString() {
			return func(k int64, _ *rng, v *types.Value) { *v = types.Value{S: strconv.FormatInt(start+k, 10)} }, end - start + 1
		}
		return func(k int64, _ *rng, v *types.Value) { *v = types.Value{I: start + k} }, end - start + 1
	case t.Kind == types.Double || t.Kind == types.Float:
		start, err1 := strconv.ParseFloat(startS, 64)
		end, err2 := strconv.ParseFloat(endS, 64)
		if err1 != nil || err2 != nil || end < start {
			o.Invalid(key("start"), "a sequence of %s needs numbers start <= end", t)
			return nil, -1
		}
		return func(k int64, _ *rng, v *types.Value) { *v = types.FloatValue(start + float64(k)) }, int64(end-start) + 1
	case t.Kind == types.Decimal && !t.BigDecimal():
		s, err1 := format.ParseDecimal([]byte(startS), t)
		e, err2 := format.ParseDecimal([]byte(endS), t)
		if err1 != nil || err2 != nil || e.I < s.I {
			o.Invalid(key("start"), "a sequence of %s needs numbers start <= end", t)
			return nil, -1
		}
		unit := int64(math.Pow10(t.Scale))
		return func(k int64, _ *rng, v *types.Value) { *v = types.Value{I: s.I + k*unit} }, (e.I-s.I)/unit + 1
	}
	o.Invalid(key("kind"), "a sequence of %s is not supported (integers, DECIMAL, DOUBLE, FLOAT and strings are)", t)
	return nil, -1
}

func random(o *connector.Options, t types.Type, key func(string) string, at func(k int64) int64, top bool) gen {
	// Options are read for the top-level column only; nested values use
	// the defaults.
	intOpt := func(name string, def int64) int64 {
		if !top {
			return def
		}
		return o.Int(key(name), def)
	}
	switch t.Kind {
	case types.Boolean:
		return func(_ int64, r *rng, v *types.Value) { *v = types.Value{I: int64(r.next() & 1)} }
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		bits := map[types.Kind]uint{types.TinyInt: 8, types.SmallInt: 16, types.Int: 32, types.BigInt: 64}[t.Kind]
		lo, hi := int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1)
		mn, mx := intOpt("min", lo), intOpt("max", hi)
		if mn < lo || mx > hi || mn > mx {
			o.Invalid(key("min"), "min %d and max %d must be within %s's range, min <= max", mn, mx, t)
		}
		span := uint64(mx - mn)
		return func(_ int64, r *rng, v *types.Value) {
			x := r.next()
			if span != math.MaxUint64 {
				x %= span + 1
			}
			*v = types.Value{I: mn + int64(x)}
		}
	case types.Float, types.Double:
		lo, hi := math.SmallestNonzeroFloat64, math.MaxFloat64
		if t.Kind == types.Float {
			lo, hi = math.SmallestNonzeroFloat32, math.MaxFloat32
		}
		if top {
			lo, hi = o.Float(key("min"), lo), o.Float(key("max"), hi)
		}
		return func(_ int64, r *rng, v *types.Value) {
			f := lo + r.float()*(hi-lo)
			if t.Kind == types.Float {
				f = float64(float32(f))
			}
			*v = types.FloatValue(f)
		}
	case types.Decimal:
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)
		limit.Sub(limit, big.NewInt(1))
		lo, hi := new(big.Int).Neg(limit), limit
		if top {
			for _, b := range []struct {
				name string
				dst  **big.Int
			}{{"min", &lo}, {"max", &hi}} {
				if s, ok := o.Lookup(key(b.name)); ok {
					d, err := format.ParseDecimal([]byte(s), t)
					if err != nil {
						o.Invalid(key(b.name), "%v", err)
						continue
					}
					if t.BigDecimal() {
						*b.dst = d.BigInt()
					} else {
						*b.dst = big.NewInt(d.I)
					}
				}
			}
		}
		span := new(big.Int).Sub(hi, lo)
		span.Add(span, big.NewInt(1))
		if span.Sign() <= 0 {
			o.Invalid(key("min"), "min must not be above max")
			span = big.NewInt(1)
		}
		if !t.BigDecimal() {
			l, s := lo.Int64(), span.Uint64()
			return func(_ int64, r *rng, v *types.Value) { *v = types.Value{I: l + int64(r.next()%s)} }
		}
		return func(_ int64, r *rng, v *types.Value) {
			x := new(big.Int).SetUint64(r.next())
			x.Lsh(x, 64).Or(x, new(big.Int).SetUint64(r.next()))
			x.Mod(x, span).Add(x, lo)
			*v = types.Value{X: x}
		}
	case types.Char, types.Varchar, types.Binary, types.Varbinary:
		n := intOpt("length", 100)
		if t.Length > 0 && int64(t.Length) < n {
			n = int64(t.Length)
		}
		if (t.Kind == types.Char || t.Kind == types.Binary) && t.Length > 0 {
			n = int64(t.Length)
		}
		if n < 0 {
			o.Invalid(key("length"), "must not be negative")
			n = 0
		} else if n > maxStringLength {
			o.Invalid(key("length"), "must be at most %d", maxStringLength)
			n = 0
		}
		hexChars := t.IsString()
		return func(_ int64, r *rng, v *types.Value) {
			b := make([]byte, n)
			for i := range b {
				x := byte(r.next())
				if hexChars {
					x = "0123456789abcdef"[x&15]
				}
				b[i] = x
			}
			*v = types.Value{S: string(b)}
		}
	case types.Timestamp, types.TimestampLTZ, types.Date, types.Time:
		var past int64
		if top {
			past = o.Duration(key("max-past"), 0).Microseconds()
		}
		kind := t.Kind
		p := t.Precision
		return func(k int64, r *rng, v *types.Value) {
			us := at(k)
			if past > 0 {
				us -= int64(r.next() % uint64(past+1))
			}
			switch kind {
			case types.Date:
				*v = types.Value{I: floorDiv(us, 86_400_000_000)}
			case types.Time:
				us = us - floorDiv(us, 86_400_000_000)*86_400_000_000
				*v = types.Value{I: trunc(us, p)}
			default:
				*v = types.Value{I: trunc(us, p)}
			}
		}
	case types.Array, types.Multiset, types.Map:
		n := intOpt("length", 3)
		if n < 0 {
			o.Invalid(key("length"), "must not be negative")
			n = 0
		} else if n > maxCollectionLength {
			o.Invalid(key("length"), "must be at most %d", maxCollectionLength)
			n = 0
		}
		elem := random(o, *t.Elem, key, at, false)
		if t.Kind != types.Map {
			return func(k int64, r *rng, v *types.Value) {
				vals := make([]types.Value, n)
				for i := range vals {
					elem(k, r, &vals[i])
				}
				*v = types.Value{X: vals}
			}
		}
		kg := random(o, *t.Key, key, at, false)
		return func(k int64, r *rng, v *types.Value) {
			vals := make([]types.Value, 2*n)
			for i := 0; i < len(vals); i += 2 {
				kg(k, r, &vals[i])
				elem(k, r, &vals[i+1])
			}
			*v = types.Value{X: vals}
		}
	case types.Structured:
		fields := make([]gen, len(t.Fields))
		for i, f := range t.Fields {
			fields[i] = random(o, f.Type, key, at, false)
		}
		return func(k int64, r *rng, v *types.Value) {
			vals := make([]types.Value, len(fields))
			for i, g := range fields {
				g(k, r, &vals[i])
			}
			*v = types.Value{X: vals}
		}
	}
	o.Errorf("column type %s is not supported by the datagen connector", t)
	return func(int64, *rng, *types.Value) {}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

func trunc(us int64, p int) int64 {
	if p >= 6 {
		return us
	}
	m := int64(math.Pow10(6 - p))
	return floorDiv(us, m) * m
}

// rng is splitmix64: each row and column gets its own stream, seeded from
// (seed, column, row), so values do not depend on which split makes them.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float returns a number in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

type source struct {
	gens   []gen
	rows   int64 // < 0: unbounded
	rate   float64
	seed   uint64
	splits int
}

type split int

func (s split) ID() string { return "datagen-" + strconv.Itoa(int(s)) }

var _ weir.RestorableSource[types.Row] = (*source)(nil)

func (s *source) Splits(context.Context) ([]weir.Split, error) {
	out := make([]weir.Split, s.splits)
	for i := range out {
		out[i] = split(i)
	}
	return out, nil
}

func (s *source) Open(_ context.Context, sp weir.Split) (weir.SplitReader[types.Row], error) {
	i, ok := sp.(split)
	if !ok || int(i) >= s.splits {
		return nil, fmt.Errorf("datagen: no split %s", sp.ID())
	}
	return &reader{s: s, next: int64(i)}, nil
}

func (s *source) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[types.Row], error) {
	r, err := s.Open(ctx, sp)
	if err != nil {
		return nil, err
	}
	next, err := strconv.ParseInt(string(pos), 10, 64)
	if err != nil || next < 0 || next%int64(s.splits) != int64(sp.(split)) {
		return nil, fmt.Errorf("datagen: split %s: invalid position %q", sp.ID(), pos)
	}
	r.(*reader).next = next
	return r, nil
}

type reader struct {
	s       *source
	next    int64 // the next row number
	start   time.Time
	emitted int64 // since start
	timer   *time.Timer
}

func (r *reader) Read(ctx context.Context, dst []types.Row) (int, error) {
	s := r.s
	step := int64(s.splits)
	if s.rows >= 0 && r.next >= s.rows {
		return 0, io.EOF
	}
	// Pace: this split's share of rows-per-second.
	if r.start.IsZero() {
		r.start = time.Now()
	}
	due := int64(time.Since(r.start).Seconds()*s.rate/float64(s.splits)) + 1
	allowed := due - r.emitted
	if allowed <= 0 {
		wait := time.Duration(float64(-allowed+1) / (s.rate / float64(s.splits)) * 1e9)
		return 0, r.wait(ctx, min(wait, 10*time.Millisecond))
	}
	n := 0
	for n < len(dst) && int64(n) < allowed && (s.rows < 0 || r.next < s.rows) {
		vals := make([]types.Value, len(s.gens))
		for j, g := range s.gens {
			rg := rng{s: s.seed ^ uint64(j+1)*0x9e3779b97f4a7c15 ^ uint64(r.next)*0xd1b54a32d192ed03}
			g(r.next, &rg, &vals[j])
		}
		dst[n] = types.Row{Kind: types.Insert, Values: vals}
		r.next += step
		n++
	}
	r.emitted += int64(n)
	if s.rows >= 0 && r.next >= s.rows {
		return n, io.EOF
	}
	return n, nil
}

func (r *reader) wait(ctx context.Context, d time.Duration) error {
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		r.timer.Stop()
		return context.Cause(ctx)
	case <-r.timer.C:
		return nil
	}
}

func (r *reader) Position() ([]byte, error) { return strconv.AppendInt(nil, r.next, 10), nil }

func (r *reader) Close() error {
	if r.timer != nil {
		r.timer.Stop()
	}
	return nil
}
