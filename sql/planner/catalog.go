package planner

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// tableDef is a table registered by CREATE TABLE.
type tableDef struct {
	ddl *parser.CreateTable
	// cols are all columns in declaration order: physical, metadata and
	// computed; the rowtime column carries TimeAttr.
	cols []expr.Column
	// physical maps the table's physical columns to cols indexes, in the
	// order the connector produces them.
	physical []int
	// computed columns: index in cols and expression over the physical row.
	computed []computedCol
	// meta are the metadata columns (`c T METADATA [FROM 'key']
	// [VIRTUAL]`), in declaration order: a source appends them after the
	// physical columns, and a sink writes those not VIRTUAL.
	meta []metaCol
	pk   []int // indexes in the physical schema
	// partitions are the PARTITIONED BY columns (indexes in the physical
	// schema), in order.
	partitions []int
	options    map[string]string
	// rowtime is the cols index of the WATERMARK column (-1: none); delay
	// the watermark's bound.
	rowtime int
	delay   time.Duration
}

type metaCol struct {
	idx     int // in cols
	key     string
	virtual bool
}

type computedCol struct {
	idx  int
	expr parser.Expr
}

// viewDef is a view registered by CREATE VIEW.
type viewDef struct {
	ddl *parser.CreateView
}

// catalog holds the session's tables and views (Flink's
// default_catalog.default_database); names are case-insensitive.
type catalog struct {
	tables map[string]*tableDef
	views  map[string]*viewDef
	// funcs are the user-defined functions by upper-case name; fnMap
	// their functions, for expression compilers (built when needed).
	funcs map[string]*funcDef
	fnMap map[string]expr.Function
}

func newCatalog() *catalog {
	return &catalog{tables: map[string]*tableDef{}, views: map[string]*viewDef{}, funcs: map[string]*funcDef{}}
}

func normName(n string) string {
	// catalog.database.table names resolve to the table in the one
	// catalog weir has.
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		n = n[i+1:]
	}
	return strings.ToLower(n)
}

func (c *catalog) exists(name string) bool {
	n := normName(name)
	return c.tables[n] != nil || c.views[n] != nil
}

func (c *catalog) names() []string {
	var out []string
	for _, t := range c.tables {
		out = append(out, t.ddl.Name)
	}
	for _, v := range c.views {
		out = append(out, v.ddl.Name)
	}
	sort.Strings(out)
	return out
}

// createTable validates a CREATE TABLE and registers it.
func (c *catalog) createTable(ct *parser.CreateTable) error {
	if c.exists(ct.Name) {
		if ct.IfNotExists {
			return nil
		}
		return parser.Errorf(ct.Pos, "table or view '%s' already exists", ct.Name)
	}
	td := &tableDef{ddl: ct, options: map[string]string{}, rowtime: -1}
	for _, o := range ct.Options {
		if _, dup := td.options[o.Key]; dup {
			return parser.Errorf(o.Pos, "option '%s' is given twice", o.Key)
		}
		td.options[o.Key] = o.Value
	}
	seen := map[string]bool{}
	var phys expr.Scope
	for _, col := range ct.Columns {
		if seen[strings.ToLower(col.Name)] {
			return parser.Errorf(col.Pos, "column '%s' is declared twice", col.Name)
		}
		seen[strings.ToLower(col.Name)] = true
		if col.Computed != nil {
			continue
		}
		td.physical = append(td.physical, len(td.cols))
		td.cols = append(td.cols, expr.Column{Name: col.Name, Type: col.Type})
		phys.Cols = append(phys.Cols, expr.Column{Name: col.Name, Type: col.Type})
	}
	// computed columns, compiled against the physical row to find their
	// types (they cannot refer to each other, as in Flink)
	ec := &expr.Compiler{Funcs: c.functions(), Scope: &phys, What: "a computed column"}
	out := make([]expr.Column, 0, len(ct.Columns))
	pi := 0
	for _, col := range ct.Columns {
		if col.Computed == nil {
			out = append(out, td.cols[pi])
			pi++
			continue
		}
		ce, err := ec.Compile(col.Computed)
		if err != nil {
			return err
		}
		t := ce.Type
		t.TimeAttr = types.NoTimeAttr
		if call, ok := col.Computed.(*parser.Call); ok && call.Name == "PROCTIME" {
			t.TimeAttr = types.ProctimeAttr
		}
		td.computed = append(td.computed, computedCol{idx: len(out), expr: col.Computed})
		out = append(out, expr.Column{Name: col.Name, Type: t})
	}
	td.cols = out
	td.physical = td.physical[:0]
	for i, col := range ct.Columns {
		switch {
		case col.Metadata != "":
			td.meta = append(td.meta, metaCol{idx: i, key: col.Metadata, virtual: col.Virtual})
		case col.Computed == nil:
			td.physical = append(td.physical, i)
		}
	}
	for _, k := range ct.PrimaryKey {
		found := -1
		for j, pidx := range td.physical {
			if strings.EqualFold(td.cols[pidx].Name, k) {
				found = j
			}
		}
		if found < 0 {
			return parser.Errorf(ct.Pos, "primary key column '%s' is not a physical column of '%s'", k, ct.Name)
		}
		td.pk = append(td.pk, found)
		td.cols[td.physical[found]].Type.NotNull = true
	}
	for _, k := range ct.PartitionedBy {
		found := -1
		for j, pidx := range td.physical {
			if strings.EqualFold(td.cols[pidx].Name, k) {
				found = j
			}
		}
		if found < 0 {
			return parser.Errorf(ct.Pos, "partition column '%s' is not a physical column of '%s'", k, ct.Name)
		}
		td.partitions = append(td.partitions, found)
	}
	if wm := ct.Watermark; wm != nil {
		idx := -1
		for i, col := range td.cols {
			if strings.EqualFold(col.Name, wm.Column) {
				idx = i
			}
		}
		if idx < 0 {
			return parser.Errorf(wm.Pos, "the rowtime column '%s' of the WATERMARK is not a column of '%s'", wm.Column, ct.Name)
		}
		k := td.cols[idx].Type.Kind
		if k != types.Timestamp && k != types.TimestampLTZ {
			return parser.Errorf(wm.Pos, "the rowtime column '%s' must be TIMESTAMP(3) or TIMESTAMP_LTZ(3), not %s", wm.Column, td.cols[idx].Type)
		}
		delay, err := watermarkDelay(wm, td.cols[idx].Name)
		if err != nil {
			return err
		}
		td.rowtime, td.delay = idx, delay
		td.cols[idx].Type.TimeAttr = types.RowtimeAttr
	}
	c.tables[normName(ct.Name)] = td
	return nil
}

// watermarkDelay reads the bound of WATERMARK FOR c AS c [- INTERVAL ...].
func watermarkDelay(wm *parser.Watermark, col string) (time.Duration, error) {
	isCol := func(e parser.Expr) bool {
		id, ok := e.(*parser.Ident)
		return ok && len(id.Parts) == 1 && strings.EqualFold(id.Parts[0], col)
	}
	if isCol(wm.Expr) {
		return 0, nil
	}
	if b, ok := wm.Expr.(*parser.Binary); ok && b.Op == "-" && isCol(b.L) {
		if iv, ok := b.R.(*parser.IntervalLit); ok {
			ms, months, err := expr.IntervalValue(iv)
			if err != nil {
				return 0, err
			}
			if months || ms < 0 {
				return 0, parser.Errorf(iv.Pos, "the watermark delay must be a non-negative day-time interval")
			}
			return time.Duration(ms) * time.Millisecond, nil
		}
	}
	return 0, parser.Errorf(wm.Expr.ExprPos(), "the WATERMARK expression must be `%s` or `%s - INTERVAL '...' unit` (other strategies are not supported yet)", col, col)
}

func (c *catalog) createView(cv *parser.CreateView) error {
	if c.exists(cv.Name) {
		if cv.IfNotExists {
			return nil
		}
		return parser.Errorf(cv.Pos, "table or view '%s' already exists", cv.Name)
	}
	c.views[normName(cv.Name)] = &viewDef{ddl: cv}
	return nil
}

func (c *catalog) drop(d *parser.Drop) error {
	n := normName(d.Name)
	if d.View {
		if c.views[n] == nil {
			if d.IfExists {
				return nil
			}
			return parser.Errorf(d.Pos, "view '%s' does not exist", d.Name)
		}
		delete(c.views, n)
		return nil
	}
	if c.tables[n] == nil {
		if d.IfExists {
			return nil
		}
		return parser.Errorf(d.Pos, "table '%s' does not exist", d.Name)
	}
	delete(c.tables, n)
	return nil
}

// describe prints a table's or view's columns as Flink's DESCRIBE does
// (name, type, null, key, extras, watermark).
func describeSchema(cols []expr.Column, pk []string, wm string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %-32s %-5s %s\n", "name", "type", "null", "extras")
	for _, c := range cols {
		t := c.Type
		t.NotNull = false
		null := "TRUE"
		if c.Type.NotNull {
			null = "FALSE"
		}
		extra := ""
		for _, k := range pk {
			if strings.EqualFold(k, c.Name) {
				extra = "PRI"
			}
		}
		if wm != "" && strings.EqualFold(wm, c.Name) {
			extra = strings.TrimSpace(extra + " WATERMARK")
		}
		fmt.Fprintf(&b, "%-20s %-32s %-5s %s\n", c.Name, t.String(), null, extra)
	}
	return b.String()
}
