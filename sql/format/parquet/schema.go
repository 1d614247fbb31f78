package parquet

import (
	"fmt"
	"reflect"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/weirstream/weir/sql/types"
)

// group is a Parquet group whose fields keep the order they are declared
// in (parquet-go's Group is a map, whose fields sort by name): a table's
// columns, a ROW's fields.
type group []namedNode

type namedNode struct {
	name string
	pq.Node
}

func (n *namedNode) Name() string { return n.name }
func (n *namedNode) Value(base reflect.Value) reflect.Value {
	return base.MapIndex(reflect.ValueOf(&n.name).Elem())
}
func (g group) ID() int                     { return 0 }
func (g group) String() string              { return pq.Group(g.asMap()).String() }
func (g group) Type() pq.Type               { return pq.Group{}.Type() }
func (g group) Optional() bool              { return false }
func (g group) Repeated() bool              { return false }
func (g group) Required() bool              { return true }
func (g group) Leaf() bool                  { return false }
func (g group) Encoding() encoding.Encoding { return nil }
func (g group) Compression() compress.Codec { return nil }
func (g group) GoType() reflect.Type        { return pq.Group(g.asMap()).GoType() }
func (g group) asMap() map[string]pq.Node {
	m := make(map[string]pq.Node, len(g))
	for i := range g {
		m[g[i].name] = g[i].Node
	}
	return m
}
func (g group) Fields() []pq.Field {
	fs := make([]pq.Field, len(g))
	for i := range g {
		fs[i] = &g[i]
	}
	return fs
}

// wnode is a column (or nested field) of the table as the writer shreds
// it: the leaf columns below it are lo..hi-1.
type wnode struct {
	name     string
	t        types.Type
	optional bool
	kind     nodeKind
	rep      int // list, map: the repetition level of its repeated group
	lo, hi   int
	fields   []*wnode // row
	elem     *wnode   // list; map: the value
	key      *wnode   // map
	leaf     leafWriter
}

type nodeKind uint8

const (
	leafNode nodeKind = iota
	rowNode
	listNode
	mapNode
)

// schemaBuilder builds the Parquet schema of a table's columns and the
// writer's tree alongside it.
type schemaBuilder struct {
	opts   *Options
	leaves int
}

func (b *schemaBuilder) node(name string, t types.Type, rep int) (pq.Node, *wnode, error) {
	w := &wnode{name: name, t: t, optional: !t.NotNull, lo: b.leaves}
	var n pq.Node
	switch t.Kind {
	case types.Structured:
		w.kind = rowNode
		g := make(group, len(t.Fields))
		for i, f := range t.Fields {
			fn, fw, err := b.node(f.Name, f.Type, rep)
			if err != nil {
				return nil, nil, err
			}
			g[i] = namedNode{f.Name, fn}
			w.fields = append(w.fields, fw)
		}
		n = g
	case types.Array:
		w.kind, w.rep = listNode, rep+1
		en, ew, err := b.node("element", *t.Elem, rep+1)
		if err != nil {
			return nil, nil, err
		}
		w.elem = ew
		n = pq.List(en)
	case types.Map:
		w.kind, w.rep = mapNode, rep+1
		k := *t.Key
		k.NotNull = true // Parquet's map keys are required
		kn, kw, err := b.node("key", k, rep+1)
		if err != nil {
			return nil, nil, err
		}
		vn, vw, err := b.node("value", *t.Elem, rep+1)
		if err != nil {
			return nil, nil, err
		}
		w.key, w.elem = kw, vw
		n = pq.Map(kn, vn)
	default:
		var err error
		n, w.leaf, err = b.leaf(t)
		if err != nil {
			return nil, nil, fmt.Errorf("column '%s': %w", name, err)
		}
		b.leaves++
	}
	w.hi = b.leaves
	if w.optional {
		n = pq.Optional(n)
	} else {
		n = pq.Required(n)
	}
	return n, w, nil
}

// Schema returns the Parquet schema weir writes for the columns (see the
// package documentation for the mapping).
func Schema(name string, cols types.Schema, opts *Options) (*pq.Schema, error) {
	s, _, err := buildSchema(name, cols, opts)
	return s, err
}

func buildSchema(name string, cols types.Schema, opts *Options) (*pq.Schema, []*wnode, error) {
	b := &schemaBuilder{opts: opts}
	g := make(group, len(cols))
	ws := make([]*wnode, len(cols))
	for i, c := range cols {
		n, w, err := b.node(c.Name, c.Type, 0)
		if err != nil {
			return nil, nil, err
		}
		g[i], ws[i] = namedNode{c.Name, n}, w
	}
	return pq.NewSchema(name, g), ws, nil
}

// decimalBytes is the length of the FIXED_LEN_BYTE_ARRAY holding the
// unscaled values of a DECIMAL of precision p, in two's complement.
func decimalBytes(p int) int {
	n := 1
	for ; n < 16; n++ {
		// the largest value of n bytes has at least p digits
		if float64(n*8-1)*0.30102999566398 >= float64(p) {
			break
		}
	}
	return n
}
