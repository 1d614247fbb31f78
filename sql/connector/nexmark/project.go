package nexmark

import (
	"context"
	"fmt"
	"strings"

	"github.com/weirstream/weir"
	gen "github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

// getter writes one value of a projected row.
type getter func(e *gen.Event, v *types.Value)

// slotGet is a getter and the value of the row it writes.
type slotGet struct {
	slot int
	get  getter
}

// readPlan is how a projected row is made from an event of one type: the
// getters of the values it has (its own ROW's fields, the columns every
// event has) and the values that are NULL for it (the fields of the other
// types' ROWs), so that no getter tests the event's type.
type readPlan struct {
	gets  []slotGet
	nulls []int
}

// otherType is the plan index of an event type the table has no ROW for.
const otherType = 3

func planIndex(t gen.EventType) int {
	if t <= gen.BidEvent {
		return int(t)
	}
	return otherType
}

// project compiles the plans of a projected read, one per event type:
// value i of a row is paths[i] of the table's schema. Most plans read a
// few scalar fields of one ROW (bid.auction, bid.price), so a projected
// row is a handful of flat values and no nested ROW is built.
func project(schema types.Schema, conv []setter, widths []int, paths []connector.Path) (*[otherType + 1]readPlan, error) {
	var plans [otherType + 1]readPlan
	all := func(slot int, g getter) {
		for t := range plans {
			plans[t].gets = append(plans[t].gets, slotGet{slot, g})
		}
	}
	for i, p := range paths {
		if p.Col == -1 {
			continue // the planner's to fill
		}
		if p.Col < 0 || p.Col >= len(schema) {
			return nil, fmt.Errorf("projection of column %d of %d", p.Col, len(schema))
		}
		col := schema[p.Col]
		if p.Field < 0 {
			set, w := conv[p.Col], widths[p.Col]
			all(i, func(e *gen.Event, v *types.Value) {
				var spare []types.Value
				if w > 0 {
					spare = make([]types.Value, w)
				}
				set(e, v, spare)
			})
			continue
		}
		name := strings.ToLower(col.Name)
		part, ok := parts[name]
		if !ok || col.Type.Kind != types.Structured || p.Field >= len(col.Type.Fields) {
			return nil, fmt.Errorf("projection of field %d of column '%s', which has no such field", p.Field, col.Name)
		}
		var fd *field
		for j := range part.fields {
			if strings.EqualFold(part.fields[j].name, col.Type.Fields[p.Field].Name) {
				fd = &part.fields[j]
			}
		}
		if fd == nil { // compile has checked the schema
			return nil, fmt.Errorf("column '%s.%s' is not a field of a nexmark %s", col.Name, col.Type.Fields[p.Field].Name, name)
		}
		for t := range plans {
			if t == int(part.typ) {
				plans[t].gets = append(plans[t].gets, slotGet{i, fd.set})
			} else {
				plans[t].nulls = append(plans[t].nulls, i) // the ROW is NULL
			}
		}
	}
	return &plans, nil
}

// projSource is a source of projected rows.
type projSource struct {
	events *gen.EventSource
	plans  *[otherType + 1]readPlan
	width  int
	fill   func([]types.Value)
}

var _ weir.RestorableSource[types.Row] = (*projSource)(nil)

func (s *projSource) Splits(ctx context.Context) ([]weir.Split, error) { return s.events.Splits(ctx) }

func (s *projSource) Open(ctx context.Context, sp weir.Split) (weir.SplitReader[types.Row], error) {
	r, err := s.events.Open(ctx, sp)
	if err != nil {
		return nil, err
	}
	return &projReader{r: r.(weir.CheckpointedReader[gen.Event]), plans: s.plans, width: s.width, fill: s.fill}, nil
}

func (s *projSource) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[types.Row], error) {
	r, err := s.events.OpenAt(ctx, sp, pos)
	if err != nil {
		return nil, err
	}
	return &projReader{r: r.(weir.CheckpointedReader[gen.Event]), plans: s.plans, width: s.width, fill: s.fill}, nil
}

type projReader struct {
	r     weir.CheckpointedReader[gen.Event]
	plans *[otherType + 1]readPlan
	width int
	fill  func([]types.Value)
	buf   []gen.Event
	slab  []types.Value
}

// Read generates up to len(dst) events and converts them into rows that
// share one slab of values, reused by the next Read (see
// connector.Source.Project): no allocation per row or per batch.
func (r *projReader) Read(ctx context.Context, dst []types.Row) (int, error) {
	if cap(r.buf) < len(dst) {
		r.buf = make([]gen.Event, len(dst))
	}
	evs := r.buf[:len(dst)]
	n, err := r.r.Read(ctx, evs)
	k := r.width
	if cap(r.slab) < n*k {
		r.slab = make([]types.Value, len(dst)*k)
	}
	slab := r.slab[:n*k]
	for i := 0; i < n; i++ {
		vals := slab[i*k : (i+1)*k : (i+1)*k]
		e := &evs[i]
		p := &r.plans[planIndex(e.Type)]
		for _, g := range p.gets {
			g.get(e, &vals[g.slot])
		}
		for _, j := range p.nulls {
			vals[j] = types.NullValue
		}
		if r.fill != nil {
			r.fill(vals)
		}
		dst[i] = types.Row{Kind: types.Insert, Values: vals}
	}
	return n, err
}

func (r *projReader) Position() ([]byte, error) { return r.r.Position() }
func (r *projReader) Close() error              { return r.r.Close() }
