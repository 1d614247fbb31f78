package parser

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestParse runs testdata/parse: each case is statements and either a
// summary of what was parsed (statement kinds, tables, columns, types) or
// the error with its line and column.
func TestParse(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, parseCase)
	})
}

func parseCase(t *testing.T, d *datadriven.TestData) string {
	text := d.Input
	if d.HasArg("vars") {
		var kvs []string
		d.ScanArgs(t, "vars", &kvs)
		vars := map[string]string{}
		for _, kv := range kvs {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		var err error
		if text, err = Substitute(text, vars); err != nil {
			return "error: " + err.Error() + "\n"
		}
	}
	stmts, err := Parse(text)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b strings.Builder
	for _, s := range stmts {
		b.WriteString(summary(s))
		b.WriteByte('\n')
	}
	return b.String()
}

// summary is a one-line summary of a statement, for tests.
func summary(s Stmt) string {
	switch s := s.(type) {
	case *CreateTable:
		var cols []string
		for _, c := range s.Columns {
			if c.Computed != nil {
				cols = append(cols, c.Name+" AS "+ExprString(c.Computed))
			} else {
				cols = append(cols, c.Name+" "+c.Type.String())
			}
		}
		out := fmt.Sprintf("create table %s (%s)", s.Name, strings.Join(cols, ", "))
		if s.Watermark != nil {
			out += " watermark " + s.Watermark.Column + " AS " + ExprString(s.Watermark.Expr)
		}
		if len(s.PrimaryKey) > 0 {
			out += " pk " + strings.Join(s.PrimaryKey, ",")
		}
		for _, o := range s.Options {
			out += fmt.Sprintf(" %s=%s", o.Key, o.Value)
		}
		if s.Like != nil {
			var opts []string
			for _, o := range s.Like.Options {
				opts = append(opts, o.Mode+" "+o.What)
			}
			out += fmt.Sprintf(" like %s %v", s.Like.Name, opts)
		}
		if s.AsQuery != nil {
			out += " as " + QueryString(s.AsQuery)
		}
		return out
	case *CreateView:
		return "create view " + s.Name + " AS " + QueryString(s.Query)
	case *Drop:
		if s.Function {
			if s.System {
				return fmt.Sprintf("drop function temporary=%v system=%v ifexists=%v %s", s.Temporary, s.System, s.IfExists, s.Name)
			}
			return fmt.Sprintf("drop function temporary=%v ifexists=%v %s", s.Temporary, s.IfExists, s.Name)
		}
		if s.Temporary {
			return fmt.Sprintf("drop temporary view=%v ifexists=%v %s", s.View, s.IfExists, s.Name)
		}
		return fmt.Sprintf("drop view=%v ifexists=%v %s", s.View, s.IfExists, s.Name)
	case *CreateFunction:
		return fmt.Sprintf("create function temporary=%v system=%v ifnotexists=%v %s as %q language=%s using=%q", s.Temporary, s.System, s.IfNotExists, s.Name, s.Identifier, s.Language, s.Using)
	case *Insert:
		return fmt.Sprintf("insert into %s %v %s", s.Table, s.Columns, QueryString(s.Query))
	case *QueryStmt:
		return QueryString(s.Query)
	case *ShowTables:
		what := "tables"
		if s.Views {
			what = "views"
		}
		return "show " + what + showFilter(s.Database, s.Like)
	case *ShowFunctions:
		return fmt.Sprintf("show functions user=%v", s.User) + showFilter(s.Database, s.Like)
	case *ShowCatalogs:
		return "show catalogs" + showFilter("", s.Like)
	case *ShowDatabases:
		return "show databases" + showFilter(s.Catalog, s.Like)
	case *ShowCurrent:
		if s.Database {
			return "show current database"
		}
		return "show current catalog"
	case *CreateCatalog:
		return fmt.Sprintf("create catalog ifnotexists=%v %s comment=%q options=%s", s.IfNotExists, s.Name, s.Comment, optionsString(s.Options))
	case *DropCatalog:
		return fmt.Sprintf("drop catalog ifexists=%v %s", s.IfExists, s.Name)
	case *CreateDatabase:
		return fmt.Sprintf("create database ifnotexists=%v %q comment=%q options=%s", s.IfNotExists, SplitName(s.Name), s.Comment, optionsString(s.Options))
	case *DropDatabase:
		return fmt.Sprintf("drop database ifexists=%v %q cascade=%v", s.IfExists, SplitName(s.Name), s.Cascade)
	case *UseCatalog:
		return "use catalog " + s.Name
	case *Use:
		return fmt.Sprintf("use %q", SplitName(s.Name))
	case *Describe:
		return "describe " + s.Name
	case *Explain:
		return "explain " + summary(s.Stmt)
	case *Set:
		return fmt.Sprintf("set %q=%q", s.Key, s.Value)
	case *Reset:
		return fmt.Sprintf("reset %q", s.Key)
	case *StatementSet:
		var parts []string
		for _, i := range s.Inserts {
			parts = append(parts, summary(i))
		}
		return "statement set {" + strings.Join(parts, "; ") + "}"
	}
	return fmt.Sprintf("%T", s)
}

func optionsString(opts []Option) string {
	var kv []string
	for _, o := range opts {
		kv = append(kv, o.Key+"="+o.Value)
	}
	return "[" + strings.Join(kv, " ") + "]"
}

// showFilter prints a SHOW's FROM and LIKE for summary.
func showFilter(from string, like *ShowLike) string {
	out := ""
	if from != "" {
		out += fmt.Sprintf(" from %q", SplitName(from))
	}
	if like != nil {
		out += fmt.Sprintf(" like not=%v ilike=%v %q", like.Not, like.ILike, like.Pattern)
	}
	return out
}

// A statement nested deeper than MaxDepth is an error with a position, not
// a stack overflow (issue 35: a million parentheses ended the process);
// the same nesting at half the limit parses.
func TestDeepNestingIsAnError(t *testing.T) {
	forms := map[string]func(n int) string{
		"parentheses": func(n int) string { return "SELECT " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) },
		"signs":       func(n int) string { return "SELECT " + strings.Repeat("- ", n) + "1" },
		"NOT":         func(n int) string { return "SELECT " + strings.Repeat("NOT ", n) + "TRUE" },
		"calls":       func(n int) string { return "SELECT " + strings.Repeat("ABS(", n) + "1" + strings.Repeat(")", n) },
		"CASE": func(n int) string {
			return "SELECT " + strings.Repeat("CASE WHEN TRUE THEN ", n) + "1" + strings.Repeat(" END", n)
		},
		"subqueries": func(n int) string {
			return "SELECT * FROM " + strings.Repeat("(SELECT * FROM ", n) + "t" + strings.Repeat(")", n)
		},
		"types": func(n int) string {
			return "CREATE TABLE t (a " + strings.Repeat("ARRAY<", n) + "INT" + strings.Repeat(">", n) + ")"
		},
	}
	for name, form := range forms {
		_, err := Parse(form(MaxDepth + 10))
		var pe *Error
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "nests more than 10000 deep") || pe.Pos.Line != 1 {
			t.Errorf("%s nested %d deep: %v; want an error saying how deep", name, MaxDepth+10, err)
		}
		if _, err := Parse(form(MaxDepth / 2)); err != nil {
			t.Errorf("%s nested %d deep: %v", name, MaxDepth/2, err)
		}
	}
}

// A minus before a negative number literal makes it positive.
func TestDoubleMinus(t *testing.T) {
	for in, want := range map[string]string{"- -1": "1", "-(-2.5)": "2.5", "- - -3": "-3"} {
		e, err := ParseExpr(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if lit, ok := e.(*Literal); !ok || lit.Text != want {
			t.Errorf("%s: %#v, want the literal %s", in, e, want)
		}
	}
}
