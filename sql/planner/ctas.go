package planner

import (
	"strings"

	"github.com/weirstream/weir/sql/parser"
)

// createTableAs runs CREATE TABLE t [(PRIMARY KEY ..., WATERMARK ...)]
// WITH (...) AS query, as Flink's CTAS: the table is created with the
// query's columns (names and types; time attributes become plain
// timestamps) and the query is inserted into it, in this statement set's
// job. Column definitions of its own are not supported yet.
func (s *Session) createTableAs(ct *parser.CreateTable) ([]*Statement, error) {
	if ct.Like != nil {
		return nil, parser.Errorf(ct.Like.Pos, "CREATE TABLE ... AS cannot also be LIKE another table")
	}
	if s.cat.exists(ct.Name, ct.Temporary) {
		if !ct.IfNotExists {
			return nil, parser.Errorf(ct.Pos, "table or view '%s' already exists", ct.Name)
		}
	} else {
		q, err := (&planner{s: s, cfg: s.plan}).planQuery(ct.AsQuery)
		if err != nil {
			return nil, err
		}
		// As Flink 2.0 (FLIP-463): the columns declared in the CREATE part
		// first, in their order and with their types (the query's values
		// cast to them; one the query does not have is NULL), then the
		// query's other columns
		def := *ct
		def.AsQuery = nil
		def.Columns = append([]parser.ColumnDef(nil), ct.Columns...)
		declared := map[string]bool{}
		for _, c := range ct.Columns {
			declared[strings.ToLower(c.Name)] = true
		}
		for _, c := range q.sc.Cols {
			if declared[strings.ToLower(c.Name)] {
				continue
			}
			t := c.Type
			t.TimeAttr = 0
			def.Columns = append(def.Columns, parser.ColumnDef{Pos: ct.Pos, Name: c.Name, Type: t})
		}
		if err := s.cat.createTable(&def); err != nil {
			return nil, err
		}
	}
	var cols []string
	if len(ct.Columns) > 0 {
		// the query's columns by name (the table's order differs)
		q, err := (&planner{s: s, cfg: s.plan}).planQuery(ct.AsQuery)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, c := range q.sc.Cols {
			n := strings.ToLower(c.Name)
			if seen[n] {
				return nil, parser.Errorf(ct.Pos, "CREATE TABLE ... AS: the query has two columns named '%s'", c.Name)
			}
			seen[n] = true
			cols = append(cols, c.Name)
		}
	}
	st, err := s.planInsert(&parser.Insert{Pos: ct.Pos, Table: ct.Name, TablePos: ct.Pos, Columns: cols, Query: ct.AsQuery})
	if err != nil {
		return nil, err
	}
	return []*Statement{st}, nil
}

// likeFeatures are what CREATE TABLE ... LIKE copies, as Flink names them.
var likeFeatures = []string{"CONSTRAINTS", "GENERATED", "OPTIONS", "WATERMARKS", "PARTITIONS", "METADATA"}

// mergeLike returns ct merged with the table it is LIKE, as Flink merges
// them: by default INCLUDING ALL OVERWRITING OPTIONS. The source's
// columns come first (its computed and metadata columns with INCLUDING
// GENERATED, METADATA), then ct's; a column of the same name is an error.
// Options: ct's override the source's (OVERWRITING), or are an error when
// both have the key (INCLUDING), or are alone (EXCLUDING). A watermark
// or primary key in both is an error unless OVERWRITING (watermarks) or
// EXCLUDING.
func (c *catalog) mergeLike(ct *parser.CreateTable) (*parser.CreateTable, error) {
	lk := ct.Like
	src, srcView, _ := c.lookup(lk.Name)
	if src == nil {
		if srcView != nil {
			return nil, parser.Errorf(lk.Pos, "LIKE needs a table, and '%s' is a view", lk.Name)
		}
		return nil, parser.Errorf(lk.Pos, "table '%s' of LIKE not found", lk.Name)
	}
	mode := map[string]string{}
	for _, f := range likeFeatures {
		mode[f] = "INCLUDING"
	}
	mode["OPTIONS"] = "OVERWRITING"
	for _, o := range lk.Options {
		if o.What == "ALL" {
			if o.Mode == "OVERWRITING" {
				return nil, parser.Errorf(o.Pos, "OVERWRITING ALL is not allowed (Flink: only INCLUDING or EXCLUDING ALL)")
			}
			for _, f := range likeFeatures {
				mode[f] = o.Mode
			}
			continue
		}
		if _, ok := mode[o.What]; !ok {
			return nil, parser.Errorf(o.Pos, "unknown LIKE option %s (want ALL, %s)", o.What, strings.Join(likeFeatures, ", "))
		}
		if o.Mode == "OVERWRITING" && (o.What == "CONSTRAINTS" || o.What == "PARTITIONS") {
			return nil, parser.Errorf(o.Pos, "OVERWRITING %s is not allowed (Flink: INCLUDING or EXCLUDING)", o.What)
		}
		mode[o.What] = o.Mode
	}
	sd := src.ddl
	out := *ct
	out.Like = nil
	out.Columns = nil
	names := map[string]bool{}
	for _, col := range sd.Columns {
		if (col.Computed != nil && mode["GENERATED"] == "EXCLUDING") || (col.Metadata != "" && mode["METADATA"] == "EXCLUDING") {
			continue
		}
		out.Columns = append(out.Columns, col)
		names[strings.ToLower(col.Name)] = true
	}
	for _, col := range ct.Columns {
		if names[strings.ToLower(col.Name)] {
			return nil, parser.Errorf(col.Pos, "a column named '%s' already exists in the table '%s' of LIKE", col.Name, lk.Name)
		}
		out.Columns = append(out.Columns, col)
	}
	switch m := mode["WATERMARKS"]; {
	case sd.Watermark == nil || m == "EXCLUDING":
	case ct.Watermark == nil:
		out.Watermark = sd.Watermark
	case m == "INCLUDING":
		return nil, parser.Errorf(ct.Watermark.Pos, "both '%s' and the table of LIKE define a watermark (OVERWRITING WATERMARKS keeps this one)", ct.Name)
	}
	switch m := mode["CONSTRAINTS"]; {
	case len(sd.PrimaryKey) == 0 || m == "EXCLUDING":
	case len(ct.PrimaryKey) == 0:
		out.PrimaryKey = sd.PrimaryKey
	default:
		return nil, parser.Errorf(ct.Pos, "both '%s' and the table of LIKE define a primary key (EXCLUDING CONSTRAINTS keeps this one)", ct.Name)
	}
	switch m := mode["PARTITIONS"]; {
	case len(sd.PartitionedBy) == 0 || m == "EXCLUDING":
	case len(ct.PartitionedBy) == 0:
		out.PartitionedBy = sd.PartitionedBy
	default:
		return nil, parser.Errorf(ct.Pos, "both '%s' and the table of LIKE are PARTITIONED BY (EXCLUDING PARTITIONS keeps this one)", ct.Name)
	}
	switch mode["OPTIONS"] {
	case "EXCLUDING":
	default:
		own := map[string]parser.Option{}
		for _, o := range ct.Options {
			own[o.Key] = o
		}
		var merged []parser.Option
		for _, o := range sd.Options {
			if mine, ok := own[o.Key]; ok {
				if mode["OPTIONS"] == "INCLUDING" {
					return nil, parser.Errorf(mine.Pos, "option '%s' is in both '%s' and the table of LIKE (OVERWRITING OPTIONS, the default, keeps this one)", o.Key, ct.Name)
				}
				continue
			}
			merged = append(merged, o)
		}
		out.Options = append(merged, ct.Options...)
	}
	return &out, nil
}
