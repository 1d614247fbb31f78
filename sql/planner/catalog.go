package planner

import (
	"fmt"
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
	// home is the database names resolved against when the view was
	// created (lower case): its query's names resolve against it.
	home dbPath
}

// createTable validates a CREATE TABLE and registers it.
// A permanent table goes into its database, which must exist; a
// TEMPORARY one among the temporary objects (catalog_manager.go).
func (c *catalog) createTable(ct *parser.CreateTable) error {
	put, err := c.creating(ct.Name, ct.Temporary, ct.IfNotExists, ct.Pos)
	if put == nil {
		return err
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
	put(td, nil)
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

// creating checks that CREATE [TEMPORARY] TABLE|VIEW name may create its
// object and returns how to register it; nil and no error when an object
// of that name exists and IF NOT EXISTS was given. As Flink, a permanent
// object needs its catalog and database to exist and a temporary one
// does not; tables and views share their names, and a temporary object
// may hide a permanent one of the same name.
func (c *catalog) creating(name string, temporary, ifNotExists bool, pos parser.Pos) (func(*tableDef, *viewDef), error) {
	id := c.qualify(name)
	if temporary {
		if c.exists(name, true) {
			if ifNotExists {
				return nil, nil
			}
			return nil, parser.Errorf(pos, "temporary table or view '%s' already exists", name)
		}
		return func(td *tableDef, v *viewDef) {
			if td != nil {
				c.tempTables[id] = td
			} else {
				c.tempViews[id] = v
			}
		}, nil
	}
	db, err := c.databaseOf(name, pos)
	if err != nil {
		return nil, err
	}
	if c.exists(name, false) {
		if ifNotExists {
			return nil, nil
		}
		return nil, parser.Errorf(pos, "table or view '%s' already exists", name)
	}
	return func(td *tableDef, v *viewDef) {
		if td != nil {
			db.tables[id.name] = td
		} else {
			db.views[id.name] = v
		}
	}, nil
}

func (c *catalog) createView(cv *parser.CreateView) error {
	put, err := c.creating(cv.Name, cv.Temporary, cv.IfNotExists, cv.Pos)
	if put == nil {
		return err
	}
	put(nil, &viewDef{ddl: cv, home: c.res})
	return nil
}

// drop runs DROP [TEMPORARY] TABLE|VIEW. As Flink, DROP TEMPORARY drops a
// temporary object only, and DROP without it refuses a name that a
// temporary object of its kind holds (it would drop the permanent one
// hidden behind it, or nothing).
func (c *catalog) drop(d *parser.Drop) error {
	kind := "table"
	if d.View {
		kind = "view"
	}
	id := c.qualify(d.Name)
	_, isTempTable := c.tempTables[id]
	_, isTempView := c.tempViews[id]
	isTemp := isTempTable && !d.View || isTempView && d.View
	if d.Temporary {
		if !isTemp {
			if d.IfExists {
				return nil
			}
			return parser.Errorf(d.Pos, "temporary %s '%s' does not exist", kind, d.Name)
		}
		delete(c.tempTables, id)
		delete(c.tempViews, id)
		return nil
	}
	if isTemp {
		return parser.Errorf(d.Pos, "'%s' is a temporary %s: DROP TEMPORARY %s drops it (Flink refuses DROP %s of a temporary %s)", d.Name, kind, strings.ToUpper(kind), strings.ToUpper(kind), kind)
	}
	db := c.database(id.dbPath())
	if db != nil && d.View && db.views[id.name] != nil {
		delete(db.views, id.name)
		return nil
	}
	if db != nil && !d.View && db.tables[id.name] != nil {
		delete(db.tables, id.name)
		return nil
	}
	if d.IfExists {
		return nil
	}
	if _, err := c.databaseOf(d.Name, d.Pos); err != nil {
		return err
	}
	return parser.Errorf(d.Pos, "%s '%s' does not exist", kind, d.Name)
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
