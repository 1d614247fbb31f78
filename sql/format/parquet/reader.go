package parquet

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
	"time"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/weirstream/weir/sql/types"
)

// rnode reads a column (or a nested field) of the table from the file.
type rnode struct {
	name     string // dotted path, for messages
	kind     nodeKind
	optional bool
	def      int // the definition level at which the value is not NULL
	rep      int // list, map: the repetition level of its repeated group
	repDef   int // list, map: the definition level of a first element
	first    int // the cursor of its first leaf (NULL and empty tests)
	cursors  []int
	fields   []*rnode
	elem     *rnode
	key      *rnode
	conv     leafReader
	cursor   int // leaf: its cursor
}

// leafReader converts a non-null Parquet value.
type leafReader func(v pq.Value) (types.Value, error)

// Target is what one value of the rows a Reader reads holds: column Col
// of the table (Field >= 0: field Field of that ROW column); Col -1 is
// left zero (the caller fills it).
type Target struct{ Col, Field int }

// SchemaError is a column of the table that the file does not have, or
// has with a type that cannot be read as the column's.
type SchemaError struct {
	Column string
	Err    error
}

func (e *SchemaError) Error() string { return "column '" + e.Column + "': " + e.Err.Error() }
func (e *SchemaError) Unwrap() error { return e.Err }

// ReadError is a failure to read a file, with where it happened.
type ReadError struct {
	Path     string
	RowGroup int    // -1 when not known
	Column   string // "" when not known
	Err      error
}

func (e *ReadError) Error() string {
	var b strings.Builder
	b.WriteString("parquet file ")
	b.WriteString(e.Path)
	if e.RowGroup >= 0 {
		fmt.Fprintf(&b, ", row group %d", e.RowGroup)
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ", column '%s'", e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ReadError) Unwrap() error { return e.Err }

type planner struct {
	file    *pq.Schema
	opts    *Options
	cursors []int // leaf column index of each cursor
	names   []string
}

func logical(n pq.Node) format.LogicalTypeValue {
	if lt := n.Type().LogicalType(); lt != nil {
		return lt.Value
	}
	return nil
}

func converted(n pq.Node) (deprecated.ConvertedType, bool) {
	if ct := n.Type().ConvertedType(); ct != nil {
		return *ct, true
	}
	return 0, false
}

func field(n pq.Node, name string) pq.Node {
	for _, f := range n.Fields() {
		if f.Name() == name {
			return f
		}
	}
	return nil
}

// plan builds the reader of node n of the file (at path) as type t. def
// and rep are the levels of n's parent.
func (p *planner) plan(n pq.Node, path []string, t types.Type, def, rep int) (*rnode, error) {
	name := strings.Join(path, ".")
	r := &rnode{name: name}
	if n.Repeated() {
		return nil, &SchemaError{name, errors.New("a repeated field outside a LIST or MAP group (a legacy list) is not supported")}
	}
	if n.Optional() {
		r.optional = true
		def++
	}
	r.def = def
	start := len(p.cursors)
	switch t.Kind {
	case types.Structured:
		if n.Leaf() {
			return nil, &SchemaError{name, fmt.Errorf("the file has %s, the table %s", n.Type(), t)}
		}
		r.kind = rowNode
		for _, f := range t.Fields {
			fn := field(n, f.Name)
			if fn == nil {
				return nil, &SchemaError{name + "." + f.Name, errors.New("missing from the file")}
			}
			c, err := p.plan(fn, append(path[:len(path):len(path)], f.Name), f.Type, def, rep)
			if err != nil {
				return nil, err
			}
			r.fields = append(r.fields, c)
		}
	case types.Array, types.Map:
		_, isList := logical(n).(*format.ListType)
		_, isMap := logical(n).(*format.MapType)
		if ct, ok := converted(n); ok {
			isList = isList || ct == deprecated.List
			isMap = isMap || ct == deprecated.Map || ct == deprecated.MapKeyValue
		}
		fs := n.Fields()
		if n.Leaf() || len(fs) != 1 || !fs[0].Repeated() || (t.Kind == types.Array && !isList) || (t.Kind == types.Map && !isMap) {
			return nil, &SchemaError{name, fmt.Errorf("the file's %s is not a %s group of one repeated field", n, map[bool]string{true: "LIST", false: "MAP"}[t.Kind == types.Array])}
		}
		inner := fs[0]
		r.rep, r.repDef = rep+1, def+1
		ipath := append(path[:len(path):len(path)], inner.Name())
		if t.Kind == types.Array {
			r.kind = listNode
			efs := inner.Fields()
			if inner.Leaf() || len(efs) != 1 {
				return nil, &SchemaError{name, errors.New("a legacy (two-level) LIST is not supported")}
			}
			e, err := p.plan(efs[0], append(ipath, efs[0].Name()), *t.Elem, def+1, rep+1)
			if err != nil {
				return nil, err
			}
			r.elem = e
		} else {
			r.kind = mapNode
			k, v := field(inner, "key"), field(inner, "value")
			if k == nil || v == nil {
				return nil, &SchemaError{name, errors.New("a MAP's repeated group has no 'key' or 'value'")}
			}
			var err error
			if r.key, err = p.plan(k, append(ipath[:len(ipath):len(ipath)], "key"), *t.Key, def+1, rep+1); err != nil {
				return nil, err
			}
			if r.elem, err = p.plan(v, append(ipath[:len(ipath):len(ipath)], "value"), *t.Elem, def+1, rep+1); err != nil {
				return nil, err
			}
		}
	default:
		if !n.Leaf() {
			return nil, &SchemaError{name, fmt.Errorf("the file has a group, the table %s", t)}
		}
		conv, err := p.leaf(n, t)
		if err != nil {
			return nil, &SchemaError{name, err}
		}
		lc, ok := p.file.Lookup(path...)
		if !ok {
			return nil, &SchemaError{name, errors.New("no such leaf column in the file")}
		}
		r.kind, r.conv, r.cursor = leafNode, conv, len(p.cursors)
		p.cursors = append(p.cursors, lc.ColumnIndex)
		p.names = append(p.names, name)
	}
	for c := start; c < len(p.cursors); c++ {
		r.cursors = append(r.cursors, c)
	}
	r.first = start
	return r, nil
}

func describe(n pq.Node) string {
	s := n.Type().Kind().String()
	if lt := logical(n); lt != nil {
		s += " (" + fmt.Sprint(lt) + ")"
	}
	return s
}

// leaf returns the conversion of leaf n's values to t's.
func (p *planner) leaf(n pq.Node, t types.Type) (leafReader, error) {
	kind := n.Type().Kind()
	lt := logical(n)
	mismatch := func() (leafReader, error) {
		return nil, fmt.Errorf("the file's %s cannot be read as %s", describe(n), t)
	}
	switch t.Kind {
	case types.Boolean:
		if kind == pq.Boolean {
			return func(v pq.Value) (types.Value, error) { return types.BoolValue(v.Boolean()), nil }, nil
		}
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		if _, dec := lt.(*format.DecimalType); dec {
			break
		}
		switch kind {
		case pq.Int32:
			return func(v pq.Value) (types.Value, error) { return types.IntValue(int64(v.Int32())), nil }, nil
		case pq.Int64:
			return func(v pq.Value) (types.Value, error) { return types.IntValue(v.Int64()), nil }, nil
		}
	case types.Float, types.Double:
		switch kind {
		case pq.Float:
			return func(v pq.Value) (types.Value, error) { return types.FloatValue(float64(v.Float())), nil }, nil
		case pq.Double:
			if t.Kind == types.Float {
				return func(v pq.Value) (types.Value, error) { return types.FloatValue(float64(float32(v.Double()))), nil }, nil
			}
			return func(v pq.Value) (types.Value, error) { return types.FloatValue(v.Double()), nil }, nil
		}
	case types.Decimal:
		d, ok := lt.(*format.DecimalType)
		if !ok || int(d.Scale) > t.Scale {
			break
		}
		mul := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale-int(d.Scale))), nil)
		return decimalReader(kind, mul, t)
	case types.Char, types.Varchar:
		if kind == pq.ByteArray || kind == pq.FixedLenByteArray {
			return func(v pq.Value) (types.Value, error) { return types.StringValue(string(v.ByteArray())), nil }, nil
		}
	case types.Binary, types.Varbinary:
		if kind == pq.ByteArray || kind == pq.FixedLenByteArray {
			return func(v pq.Value) (types.Value, error) { return types.StringValue(string(v.ByteArray())), nil }, nil
		}
	case types.Date:
		if _, ok := lt.(*format.DateType); ok && kind == pq.Int32 {
			return func(v pq.Value) (types.Value, error) { return types.IntValue(int64(v.Int32())), nil }, nil
		}
	case types.Time:
		tt, ok := lt.(*format.TimeType)
		if !ok {
			break
		}
		scale := unitScale(tt.Unit)
		return func(v pq.Value) (types.Value, error) {
			if kind == pq.Int32 {
				return types.IntValue(scale(int64(v.Int32()))), nil
			}
			return types.IntValue(scale(v.Int64())), nil
		}, nil
	case types.Timestamp, types.TimestampLTZ:
		if kind == pq.Int96 {
			loc := time.Local
			if p.opts.UTC || t.Kind == types.TimestampLTZ {
				loc = time.UTC
			}
			return func(v pq.Value) (types.Value, error) { return types.IntValue(fromInt96(v.Int96(), loc)), nil }, nil
		}
		tt, ok := lt.(*format.TimestampType)
		if !ok || kind != pq.Int64 {
			break
		}
		scale := unitScale(tt.Unit)
		return func(v pq.Value) (types.Value, error) { return types.IntValue(scale(v.Int64())), nil }, nil
	}
	return mismatch()
}

// unitScale converts a time unit's count to microseconds.
func unitScale(u format.TimeUnit) func(int64) int64 {
	switch u.Value.(type) {
	case *format.MilliSeconds:
		return func(x int64) int64 { return x * 1000 }
	case *format.NanoSeconds:
		return func(x int64) int64 { return floorDiv(x, 1000) }
	}
	return func(x int64) int64 { return x }
}

func fromInt96(v deprecated.Int96, loc *time.Location) int64 {
	nanos := int64(v[1])<<32 | int64(v[0])
	micros := (int64(v[2])-julianEpoch)*86_400_000_000 + nanos/1000
	if loc != time.UTC {
		// the instant as a wall clock of loc
		t := time.UnixMicro(micros).In(loc)
		micros = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC).UnixMicro()
	}
	return micros
}

func decimalReader(kind pq.Kind, mul *big.Int, t types.Type) (leafReader, error) {
	rescale := !(mul.IsInt64() && mul.Int64() == 1)
	limit := pow10(t.Precision)
	// small: an unscaled int64 as the file has it, when it needs no
	// rescaling; else through big.Int
	small := func(x int64) (types.Value, error) {
		if !rescale && t.Precision <= 18 {
			if l := limit.Int64(); x >= l || x <= -l {
				return types.Value{}, fmt.Errorf("decimal %d (unscaled) does not fit %s", x, t)
			}
			return types.IntValue(x), nil
		}
		return bigDecimal(new(big.Int).SetInt64(x), rescale, mul, limit, t)
	}
	switch kind {
	case pq.Int32:
		return func(v pq.Value) (types.Value, error) { return small(int64(v.Int32())) }, nil
	case pq.Int64:
		return func(v pq.Value) (types.Value, error) { return small(v.Int64()) }, nil
	case pq.ByteArray, pq.FixedLenByteArray:
		return func(v pq.Value) (types.Value, error) {
			b := v.ByteArray()
			if len(b) <= 8 {
				var x int64
				for i, c := range b {
					if i == 0 {
						x = int64(int8(c)) // the sign
					} else {
						x = x<<8 | int64(c)
					}
				}
				return small(x)
			}
			u := new(big.Int).SetBytes(b)
			if b[0]&0x80 != 0 {
				u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
			}
			return bigDecimal(u, rescale, mul, limit, t)
		}, nil
	}
	return nil, fmt.Errorf("a DECIMAL of physical type %s", kind)
}

// bigDecimal is the DECIMAL of unscaled u, rescaled by mul.
func bigDecimal(u *big.Int, rescale bool, mul, limit *big.Int, t types.Type) (types.Value, error) {
	if rescale {
		u.Mul(u, mul)
	}
	if u.CmpAbs(limit) >= 0 {
		return types.Value{}, fmt.Errorf("decimal %s (unscaled) does not fit %s", u, t)
	}
	if u.IsInt64() {
		return types.IntValue(u.Int64()), nil
	}
	return types.BigDecimalValue(u), nil
}

var pows [39]*big.Int

func init() {
	pows[0] = big.NewInt(1)
	for i := 1; i < len(pows); i++ {
		pows[i] = new(big.Int).Mul(pows[i-1], big.NewInt(10))
	}
}

func pow10(n int) *big.Int { return pows[n] }

// cursor reads the values of one leaf column of a row group.
type cursor struct {
	col    int
	maxRep int
	pages  pq.Pages
	vr     pq.ValueReader
	vals   []pq.Value
	i, n   int
}

func (c *cursor) open(rg pq.RowGroup, row int64) error {
	if c.pages != nil {
		c.pages.Close()
	}
	c.pages = rg.ColumnChunks()[c.col].Pages()
	c.vr, c.i, c.n = nil, 0, 0
	if cap(c.vals) == 0 {
		c.vals = make([]pq.Value, 1024)
	}
	if row > 0 {
		return c.pages.SeekToRow(row)
	}
	return nil
}

func (c *cursor) fill() error {
	for idle := 0; ; {
		if c.vr != nil {
			n, err := c.vr.ReadValues(c.vals[:cap(c.vals)])
			if n > 0 {
				c.i, c.n = 0, n
				return nil
			}
			if err == nil {
				if idle++; idle > 100 {
					return errors.New("corrupt page: no values and no end")
				}
				continue
			}
			if err != io.EOF {
				return err
			}
			c.vr = nil
		}
		p, err := c.pages.ReadPage()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF // fewer values than rows
			}
			return err
		}
		c.vr = p.Values()
	}
}

func (c *cursor) next() (pq.Value, error) {
	if c.i == c.n {
		if err := c.fill(); err != nil {
			return pq.Value{}, err
		}
	}
	v := c.vals[c.i]
	c.i++
	return v, nil
}

// run appends the values of the next row to dst (cloned: they outlive the
// page).
func (c *cursor) run(dst []pq.Value) ([]pq.Value, error) {
	v, err := c.next()
	if err != nil {
		return dst, err
	}
	dst = append(dst, v.Clone())
	for {
		if c.i == c.n {
			if err := c.fill(); err != nil {
				if errors.Is(err, io.ErrUnexpectedEOF) {
					return dst, nil // the last row of the chunk
				}
				return dst, err
			}
		}
		if c.vals[c.i].RepetitionLevel() == 0 {
			return dst, nil
		}
		dst = append(dst, c.vals[c.i].Clone())
		c.i++
	}
}

func (c *cursor) close() {
	if c.pages != nil {
		c.pages.Close()
		c.pages = nil
	}
}

// build assembles the value of n from the runs of its cursors.
func (n *rnode) build(runs [][]pq.Value, scratch [][]pq.Value) (types.Value, error) {
	v0 := runs[n.first][0]
	if n.optional && v0.DefinitionLevel() < n.def {
		return types.NullValue, nil
	}
	switch n.kind {
	case leafNode:
		return n.conv(v0)
	case rowNode:
		vs := make([]types.Value, len(n.fields))
		for i, f := range n.fields {
			v, err := f.build(runs, scratch)
			if err != nil {
				return v, err
			}
			vs[i] = v
		}
		return types.ListValue(vs), nil
	}
	// a LIST or a MAP: split the runs into elements
	if v0.DefinitionLevel() < n.repDef {
		return types.ListValue([]types.Value{}), nil
	}
	var out []types.Value
	pos := make([]int, len(runs))
	for {
		done := true
		for _, c := range n.cursors {
			r := runs[c]
			if pos[c] >= len(r) {
				continue
			}
			done = false
			end := pos[c] + 1
			for end < len(r) && r[end].RepetitionLevel() > n.rep {
				end++
			}
			scratch[c] = r[pos[c]:end]
			pos[c] = end
		}
		if done {
			break
		}
		sub := make([][]pq.Value, len(runs))
		copy(sub, scratch)
		if n.kind == listNode {
			e, err := n.elem.build(sub, scratch)
			if err != nil {
				return e, err
			}
			out = append(out, e)
		} else {
			k, err := n.key.build(sub, scratch)
			if err != nil {
				return k, err
			}
			v, err := n.elem.build(sub, scratch)
			if err != nil {
				return v, err
			}
			out = append(out, k, v)
		}
	}
	if out == nil {
		out = []types.Value{}
	}
	return types.ListValue(out), nil
}
