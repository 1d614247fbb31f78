package planner

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/weirstream/weir/sql/parser"
)

// The statements of catalogs and databases: CREATE, DROP and USE of them,
// and the SHOW statements, which print their rows one a line, sorted, as
// weir's SHOW TABLES always has (the shell adds "Empty set" when a SHOW
// prints nothing, as Flink's sql-client). Each follows Flink's
// CatalogManager and GenericInMemoryCatalog where they differ from what a
// reader might guess; the comments say where.

// execCatalog runs st if it is one of these statements (ok), printing
// to w.
func (c *catalog) execCatalog(st parser.Stmt, w io.Writer) (ok bool, err error) {
	switch st := st.(type) {
	case *parser.CreateCatalog:
		return true, c.createCatalog(st)
	case *parser.DropCatalog:
		return true, c.dropCatalog(st)
	case *parser.CreateDatabase:
		return true, c.createDatabase(st)
	case *parser.DropDatabase:
		return true, c.dropDatabase(st)
	case *parser.UseCatalog:
		return true, c.useCatalog(st)
	case *parser.Use:
		return true, c.use(st)
	case *parser.ShowCatalogs:
		var names []string
		for _, mc := range c.catalogs {
			names = append(names, mc.name)
		}
		printNames(w, names, st.Like)
		return true, nil
	case *parser.ShowCurrent:
		if st.Database {
			fmt.Fprintln(w, c.cur.db)
		} else {
			fmt.Fprintln(w, c.cur.cat)
		}
		return true, nil
	case *parser.ShowDatabases:
		cat := c.cur.cat
		if st.Catalog != "" {
			cat = st.Catalog
		}
		mc := c.catalogs[strings.ToLower(cat)]
		if mc == nil {
			return true, parser.Errorf(st.Pos, "catalog '%s' does not exist", cat)
		}
		var names []string
		for _, db := range mc.dbs {
			names = append(names, db.name)
		}
		printNames(w, names, st.Like)
		return true, nil
	case *parser.ShowTables:
		// Flink lists the temporary tables and views of the database
		// with its catalog's (CatalogManager.listTables, listViews)
		d := c.res
		if st.Database != "" {
			var err error
			if d, _, err = c.databaseNamed(st.Database, st.Pos); err != nil {
				return true, err
			}
		}
		names, _ := c.listTables(d, st.Views)
		printNames(w, names, st.Like)
		return true, nil
	case *parser.ShowFunctions:
		return true, c.showFunctions(w, st)
	}
	return false, nil
}

// printNames prints the names like passes, sorted, one a line.
func printNames(w io.Writer, names []string, like *parser.ShowLike) {
	sort.Strings(names)
	for _, n := range names {
		if like.Match(n) {
			fmt.Fprintln(w, n)
		}
	}
}

// databaseNamed resolves a database's name, [catalog.]database (the
// current catalog when it names none), to its path (lower case) and
// database; an error at pos when it does not exist.
func (c *catalog) databaseNamed(name string, pos parser.Pos) (dbPath, *database, error) {
	parts := parser.SplitName(name)
	cat := c.cur.cat
	if len(parts) > 1 {
		cat = parts[0]
	}
	dbName := parts[len(parts)-1]
	mc := c.catalogs[strings.ToLower(cat)]
	if mc == nil {
		return dbPath{}, nil, parser.Errorf(pos, "catalog '%s' does not exist", cat)
	}
	db := mc.dbs[strings.ToLower(dbName)]
	if db == nil {
		return dbPath{}, nil, parser.Errorf(pos, "database '%s' does not exist in catalog '%s'", dbName, mc.name)
	}
	return dbPath{strings.ToLower(cat), strings.ToLower(dbName)}, db, nil
}

// optionMap reads a WITH clause, refusing a key given twice.
func optionMap(opts []parser.Option) (map[string]string, error) {
	m := make(map[string]string, len(opts))
	for _, o := range opts {
		if _, dup := m[o.Key]; dup {
			return nil, parser.Errorf(o.Pos, "option '%s' is given twice", o.Key)
		}
		m[o.Key] = o.Value
	}
	return m, nil
}

// createCatalog runs CREATE CATALOG. As Flink's CatalogManager, an
// existing catalog is an error unless IF NOT EXISTS, which then ignores
// the options; the 'type' option chooses the catalog's factory, and
// weir has one, Flink's generic_in_memory, whose only option is
// 'default-database' (default "default", GenericInMemoryCatalog's).
func (c *catalog) createCatalog(cc *parser.CreateCatalog) error {
	if mc := c.catalogs[strings.ToLower(cc.Name)]; mc != nil {
		if cc.IfNotExists {
			return nil
		}
		return parser.Errorf(cc.Pos, "catalog '%s' already exists", mc.name)
	}
	opts, err := optionMap(cc.Options)
	if err != nil {
		return err
	}
	typ, ok := opts["type"]
	if !ok {
		return parser.Errorf(cc.Pos, "catalog '%s': the option 'type' is missing (weir's catalogs are of type '%s')", cc.Name, inMemoryType)
	}
	for _, o := range cc.Options {
		switch o.Key {
		case "type":
			if !strings.EqualFold(o.Value, inMemoryType) {
				return parser.Errorf(o.Pos, "catalog '%s': catalog type '%s' is not supported: weir has only '%s' catalogs (kept in memory for the session)", cc.Name, typ, inMemoryType)
			}
		case "default-database", "property-version":
		default:
			return parser.Errorf(o.Pos, "catalog '%s': option '%s' is not supported by type '%s' (its options: 'default-database')", cc.Name, o.Key, inMemoryType)
		}
	}
	defaultDB := inMemoryDefaultDatabase
	if v, ok := opts["default-database"]; ok {
		if strings.TrimSpace(v) == "" {
			return parser.Errorf(cc.Pos, "catalog '%s': 'default-database' must name a database", cc.Name)
		}
		defaultDB = v
	}
	mc := newMemCatalog(cc.Name, defaultDB)
	mc.comment, mc.options = cc.Comment, opts
	c.catalogs[strings.ToLower(cc.Name)] = mc
	c.changed()
	return nil
}

// dropCatalog runs DROP CATALOG. As Flink's, the current catalog cannot
// be dropped; the temporary objects named in it stay.
func (c *catalog) dropCatalog(d *parser.DropCatalog) error {
	key := strings.ToLower(d.Name)
	mc := c.catalogs[key]
	if mc == nil {
		if d.IfExists {
			return nil
		}
		return parser.Errorf(d.Pos, "catalog '%s' does not exist", d.Name)
	}
	if key == strings.ToLower(c.cur.cat) {
		return parser.Errorf(d.Pos, "catalog '%s' is the current catalog and cannot be dropped (USE CATALOG another one first)", mc.name)
	}
	delete(c.catalogs, key)
	c.changed()
	return nil
}

// catalogAndName splits a database's name, [catalog.]database.
func (c *catalog) catalogAndName(name string) (cat, db string) {
	parts := parser.SplitName(name)
	cat = c.cur.cat
	if len(parts) > 1 {
		cat = parts[0]
	}
	return cat, parts[len(parts)-1]
}

// createDatabase runs CREATE DATABASE [IF NOT EXISTS] [cat.]db [COMMENT]
// [WITH]. The catalog must exist (IF NOT EXISTS or not, as Flink); the
// options are kept, not read.
func (c *catalog) createDatabase(cd *parser.CreateDatabase) error {
	cat, name := c.catalogAndName(cd.Name)
	mc := c.catalogs[strings.ToLower(cat)]
	if mc == nil {
		return parser.Errorf(cd.Pos, "catalog '%s' does not exist", cat)
	}
	if db := mc.dbs[strings.ToLower(name)]; db != nil {
		if cd.IfNotExists {
			return nil
		}
		return parser.Errorf(cd.Pos, "database '%s' already exists in catalog '%s'", db.name, mc.name)
	}
	opts, err := optionMap(cd.Options)
	if err != nil {
		return err
	}
	db := newDatabase(name)
	db.comment, db.options = cd.Comment, opts
	mc.dbs[strings.ToLower(name)] = db
	c.changed()
	return nil
}

// dropDatabase runs DROP DATABASE [IF EXISTS] [cat.]db [RESTRICT|CASCADE].
// As Flink: the current database cannot be dropped; RESTRICT, the
// default, refuses a database that has tables, views or functions, and
// CASCADE drops them with it (the temporary objects named in it stay); a
// catalog that does not exist is an error even with IF EXISTS.
func (c *catalog) dropDatabase(d *parser.DropDatabase) error {
	cat, name := c.catalogAndName(d.Name)
	if strings.EqualFold(cat, c.cur.cat) && strings.EqualFold(name, c.cur.db) {
		return parser.Errorf(d.Pos, "database '%s' is the current database and cannot be dropped (USE another one first)", name)
	}
	mc := c.catalogs[strings.ToLower(cat)]
	if mc == nil {
		return parser.Errorf(d.Pos, "catalog '%s' does not exist", cat)
	}
	db := mc.dbs[strings.ToLower(name)]
	if db == nil {
		if d.IfExists {
			return nil
		}
		return parser.Errorf(d.Pos, "database '%s' does not exist in catalog '%s'", name, mc.name)
	}
	if !db.empty() && !d.Cascade {
		var has []string
		for _, n := range []struct {
			n    int
			what string
		}{{len(db.tables), "table"}, {len(db.views), "view"}, {len(db.funcs), "function"}} {
			switch {
			case n.n == 1:
				has = append(has, "1 "+n.what)
			case n.n > 1:
				has = append(has, fmt.Sprintf("%d %ss", n.n, n.what))
			}
		}
		return parser.Errorf(d.Pos, "database '%s' in catalog '%s' is not empty: it has %s (DROP DATABASE ... CASCADE drops them with it)", db.name, mc.name, strings.Join(has, ", "))
	}
	delete(mc.dbs, strings.ToLower(name))
	c.changed()
	return nil
}

// useCatalog runs USE CATALOG c. As Flink's CatalogManager, the current
// database becomes c's default database, unless c already was the
// current catalog (then it stays).
func (c *catalog) useCatalog(u *parser.UseCatalog) error {
	mc := c.catalogs[strings.ToLower(u.Name)]
	if mc == nil {
		return parser.Errorf(u.Pos, "catalog '%s' does not exist", u.Name)
	}
	if !strings.EqualFold(mc.name, c.cur.cat) {
		c.setCurrent(dbPath{mc.name, mc.defaultDB})
	}
	return nil
}

// use runs USE [cat.]db: the database must exist.
func (c *catalog) use(u *parser.Use) error {
	d, db, err := c.databaseNamed(u.Name, u.Pos)
	if err != nil {
		return err
	}
	c.setCurrent(dbPath{c.catalogs[d.cat].name, db.name})
	return nil
}
