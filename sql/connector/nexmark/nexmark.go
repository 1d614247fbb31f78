// Package nexmark is the SQL connector 'nexmark', with the options of
// Flink's nexmark-flink connector, generating the events of weir's own
// package nexmark: the same events (for the same options) as the
// hand-written queries read, so that SQL and Go results can be compared.
//
// The table's physical columns are those of the Nexmark ddl: event_type
// INT, person ROW<id, name, emailAddress, creditCard, city, state,
// dateTime, extra>, auction ROW<id, itemName, description, initialBid,
// reserve, dateTime, expires, seller, category, extra> and bid
// ROW<auction, bidder, price, channel, url, dateTime, extra> (BIGINT,
// VARCHAR and TIMESTAMP(3) fields); the computed dateTime and the
// WATERMARK are the planner's. Columns and nested fields are matched by
// name, case-insensitively; a subset, in any order, is allowed, as is a
// physical dateTime column. The ROW of the other event types is NULL.
//
// Options: 'events.num' (the number of events; unbounded when absent),
// 'first-event.rate' and 'next-event.rate' (the event-time rate, events
// per second; weir's generator has one rate, so they must be equal;
// default 10,000,000), 'person.proportion', 'auction.proportion',
// 'bid.proportion' (default 1, 3, 46), and 'rate.limited' = 'true' to
// also emit at that rate in wall-clock time. The source has one split per
// unit of the job's parallelism and is restorable. It projects
// (connector.Source.Project): the planner asks for the columns and ROW
// fields a plan reads, and gets flat rows of those alone.
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

func init() { connector.Register(Factory{}) }

// Factory is the 'nexmark' connector.
type Factory struct{}

// Identifier implements connector.Factory.
func (Factory) Identifier() string { return "nexmark" }

// CreateSource implements connector.SourceFactory.
func (Factory) CreateSource(t *connector.Table) (*connector.Source, error) {
	o := connector.NewOptions(t)
	cfg := gen.GeneratorConfig{Events: -1, Splits: t.Settings.ParallelismOrOne()}
	bounded := false
	if n := o.Int("events.num", -1); n >= 0 {
		if n == 0 {
			o.Invalid("events.num", "must be positive")
		}
		cfg.Events, bounded = n, true
	}
	first := o.Float("first-event.rate", gen.DefaultEventRate)
	next := o.Float("next-event.rate", first)
	if first <= 0 {
		o.Invalid("first-event.rate", "must be positive")
	}
	if next != first {
		o.Invalid("next-event.rate", "must equal 'first-event.rate' (%g): weir's generator has a single rate", first)
	}
	cfg.EventRate = first
	if o.Bool("rate.limited", false) {
		cfg.RateLimit = first
	}
	cfg.PersonProportion = int(o.Int("person.proportion", 1))
	cfg.AuctionProportion = int(o.Int("auction.proportion", 3))
	cfg.BidProportion = int(o.Int("bid.proportion", 46))
	conv, nested, widths, err := compile(t.Schema)
	if err != nil {
		o.Errorf("%v", err)
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("table '%s': %w", t.Name, err)
	}
	events := gen.Source(cfg)
	src := &source{events: events, conv: conv, nested: nested}
	schema := t.Schema
	proj := func(paths []connector.Path, fill func([]types.Value)) (weir.Source[types.Row], error) {
		plans, err := project(schema, conv, widths, paths)
		if err != nil {
			return nil, fmt.Errorf("table '%s': %w", t.Name, err)
		}
		return &projSource{events: events, plans: plans, width: len(paths), fill: fill}, nil
	}
	return &connector.Source{Source: src, Bounded: bounded, Changelog: types.InsertOnly, Project: proj}, nil
}

// setter writes a column of an event's row; a nested ROW takes its values
// from spare (so that a row is one allocation) and returns how many.
type setter func(e *gen.Event, v *types.Value, spare []types.Value) int

type field struct {
	name string
	kind string // "int", "string", "time"
	// set writes the field of an event of the part's type: one call per
	// value, no type switch (a TIMESTAMP(3) in microseconds)
	set func(e *gen.Event, v *types.Value)
}

var parts = map[string]struct {
	typ    gen.EventType
	fields []field
}{
	"person": {gen.PersonEvent, []field{
		{"id", "int", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Person.ID} }},
		{"name", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Person.Name} }},
		{"emailAddress", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Person.EmailAddress} }},
		{"creditCard", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Person.CreditCard} }},
		{"city", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Person.City} }},
		{"state", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Person.State} }},
		{"dateTime", "time", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Person.DateTime * 1000} }},
		{"extra", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Person.Extra} }},
	}},
	"auction": {gen.AuctionEvent, []field{
		{"id", "int", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Auction.ID} }},
		{"itemName", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Auction.ItemName} }},
		{"description", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Auction.Description} }},
		{"initialBid", "int", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Auction.InitialBid} }},
		{"reserve", "int", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Auction.Reserve} }},
		{"dateTime", "time", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Auction.DateTime * 1000} }},
		{"expires", "time", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Auction.Expires * 1000} }},
		{"seller", "int", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Auction.Seller} }},
		{"category", "int", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Auction.Category} }},
		{"extra", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Auction.Extra} }},
	}},
	"bid": {gen.BidEvent, []field{
		{"auction", "int", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Bid.Auction} }},
		{"bidder", "int", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Bid.Bidder} }},
		{"price", "int", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Bid.Price} }},
		{"channel", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Bid.Channel} }},
		{"url", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Bid.URL} }},
		{"dateTime", "time", func(e *gen.Event, v *types.Value) { *v = types.Value{I: e.Bid.DateTime * 1000} }},
		{"extra", "string", func(e *gen.Event, v *types.Value) { *v = types.Value{S: e.Bid.Extra} }},
	}},
}

func checkKind(path, kind string, t types.Type) error {
	ok := false
	switch kind {
	case "int":
		ok = t.Kind == types.BigInt
	case "string":
		ok = t.IsString()
	case "time":
		ok = t.Kind == types.Timestamp || t.Kind == types.TimestampLTZ
	}
	if !ok {
		want := map[string]string{"int": "BIGINT", "string": "VARCHAR/STRING", "time": "TIMESTAMP(3)"}[kind]
		return fmt.Errorf("column '%s' has type %s; the nexmark connector gives %s", path, t, want)
	}
	return nil
}

// compile returns the setters, per event type how many values the nested
// ROWs of a row take, and per column how many its nested ROW takes.
func compile(schema types.Schema) ([]setter, [3]int, []int, error) {
	var out []setter
	var nested [3]int
	widths := make([]int, len(schema))
	for _, col := range schema {
		name := strings.ToLower(col.Name)
		switch {
		case name == "event_type":
			if !col.Type.IsInteger() {
				return nil, nested, nil, fmt.Errorf("column '%s' has type %s; the nexmark connector gives INT", col.Name, col.Type)
			}
			out = append(out, func(e *gen.Event, v *types.Value, _ []types.Value) int { *v = types.Value{I: int64(e.Type)}; return 0 })
		case name == "datetime":
			if err := checkKind(col.Name, "time", col.Type); err != nil {
				return nil, nested, nil, err
			}
			out = append(out, func(e *gen.Event, v *types.Value, _ []types.Value) int {
				*v = types.Value{I: e.DateTime() * 1000}
				return 0
			})
		default:
			part, ok := parts[name]
			if !ok {
				return nil, nested, nil, fmt.Errorf("column '%s' is not one of the nexmark table's (event_type, person, auction, bid)", col.Name)
			}
			if col.Type.Kind != types.Structured {
				return nil, nested, nil, fmt.Errorf("column '%s' has type %s; the nexmark connector gives a ROW", col.Name, col.Type)
			}
			var gets []func(*gen.Event, *types.Value)
			for _, nf := range col.Type.Fields {
				var fd *field
				for i := range part.fields {
					if strings.EqualFold(part.fields[i].name, nf.Name) {
						fd = &part.fields[i]
					}
				}
				if fd == nil {
					return nil, nested, nil, fmt.Errorf("column '%s.%s' is not a field of a nexmark %s", col.Name, nf.Name, name)
				}
				if err := checkKind(col.Name+"."+nf.Name, fd.kind, nf.Type); err != nil {
					return nil, nested, nil, err
				}
				gets = append(gets, fd.set)
			}
			typ := part.typ
			nested[typ] += len(gets)
			widths[len(out)] = len(gets)
			out = append(out, func(e *gen.Event, v *types.Value, spare []types.Value) int {
				if e.Type != typ {
					*v = types.NullValue
					return 0
				}
				vals := spare[:len(gets):len(gets)]
				for i, g := range gets {
					g(e, &vals[i])
				}
				*v = types.Value{X: vals}
				return len(gets)
			})
		}
	}
	return out, nested, widths, nil
}

type source struct {
	events *gen.EventSource
	conv   []setter
	nested [3]int
}

var _ weir.RestorableSource[types.Row] = (*source)(nil)

func (s *source) Splits(ctx context.Context) ([]weir.Split, error) { return s.events.Splits(ctx) }

func (s *source) Open(ctx context.Context, sp weir.Split) (weir.SplitReader[types.Row], error) {
	r, err := s.events.Open(ctx, sp)
	if err != nil {
		return nil, err
	}
	return &reader{r: r.(weir.CheckpointedReader[gen.Event]), conv: s.conv, nested: s.nested}, nil
}

func (s *source) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[types.Row], error) {
	r, err := s.events.OpenAt(ctx, sp, pos)
	if err != nil {
		return nil, err
	}
	return &reader{r: r.(weir.CheckpointedReader[gen.Event]), conv: s.conv, nested: s.nested}, nil
}

type reader struct {
	r      weir.CheckpointedReader[gen.Event]
	conv   []setter
	nested [3]int
	buf    []gen.Event
}

// Read generates up to len(dst) events and converts them; one event is one
// row, so the generator's position is the reader's.
func (r *reader) Read(ctx context.Context, dst []types.Row) (int, error) {
	if cap(r.buf) < len(dst) {
		r.buf = make([]gen.Event, len(dst))
	}
	evs := r.buf[:len(dst)]
	n, err := r.r.Read(ctx, evs)
	nc := len(r.conv)
	for i := 0; i < n; i++ {
		// One allocation per row: its columns, then its nested ROW's.
		all := make([]types.Value, nc+r.nested[min(int(evs[i].Type), 2)])
		vals, spare := all[:nc:nc], all[nc:]
		for j, c := range r.conv {
			spare = spare[c(&evs[i], &vals[j], spare):]
		}
		dst[i] = types.Row{Kind: types.Insert, Values: vals}
	}
	return n, err
}

func (r *reader) Position() ([]byte, error) { return r.r.Position() }
func (r *reader) Close() error              { return r.r.Close() }
