package planner

import (
	"sort"
	"strings"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// The session's catalogs, after Flink's CatalogManager: catalogs by name,
// each with databases of tables, views and functions; a current catalog
// and database (USE), against which a name of one part (`t`) or two
// (`db.t`) is qualified; and the temporary objects, kept apart by their
// full name, which shadow a permanent object of the same name.
//
// Where weir differs: names of catalogs, databases and objects are
// case-insensitive (weir's tables always were; Flink's are
// case-sensitive), so a Flink file runs unchanged unless it has two names
// that differ only in case. The only catalog type is Flink's
// generic_in_memory: the catalogs live as long as the session.

const (
	// builtinCatalog and builtinDatabase are Flink's built-in catalog and
	// its default database, current when a session starts.
	builtinCatalog  = "default_catalog"
	builtinDatabase = "default_database"
	// inMemoryType is the type of catalog weir has (Flink's
	// GenericInMemoryCatalog), and inMemoryDefaultDatabase the name of
	// its default database unless 'default-database' gives one.
	inMemoryType            = "generic_in_memory"
	inMemoryDefaultDatabase = "default"
)

// objectID is an object's full name, Flink's ObjectIdentifier: catalog,
// database and object, each lower case.
type objectID struct{ cat, db, name string }

// key is id as one string, for maps of plans.
func (id objectID) key() string { return id.cat + "\x00" + id.db + "\x00" + id.name }

func (id objectID) dbPath() dbPath { return dbPath{id.cat, id.db} }

// dbPath names a database by catalog and database.
type dbPath struct{ cat, db string }

func (d dbPath) lower() dbPath { return dbPath{strings.ToLower(d.cat), strings.ToLower(d.db)} }

// memCatalog is a generic_in_memory catalog.
type memCatalog struct {
	name      string // as created
	comment   string
	options   map[string]string
	defaultDB string // as its option gave it
	dbs       map[string]*database
}

// database is a database of a catalog: its tables, views and (catalog)
// functions, by lower-case name.
type database struct {
	name    string // as created
	comment string
	options map[string]string
	tables  map[string]*tableDef
	views   map[string]*viewDef
	funcs   map[string]*funcDef
}

func newDatabase(name string) *database {
	return &database{name: name, tables: map[string]*tableDef{}, views: map[string]*viewDef{}, funcs: map[string]*funcDef{}}
}

func (db *database) empty() bool {
	return len(db.tables) == 0 && len(db.views) == 0 && len(db.funcs) == 0
}

func newMemCatalog(name, defaultDB string) *memCatalog {
	c := &memCatalog{name: name, defaultDB: defaultDB, options: map[string]string{}, dbs: map[string]*database{}}
	c.dbs[strings.ToLower(defaultDB)] = newDatabase(defaultDB)
	return c
}

// catalog is the session's catalog manager.
type catalog struct {
	catalogs map[string]*memCatalog // by lower-case name
	// cur is the current catalog and database, as named (USE); res is
	// the one names resolve against, lower case: cur's, except while a
	// view's query is planned, when it is the view's (within).
	cur dbPath
	res dbPath
	// the temporary objects by full name; their catalog and database
	// need not exist, as in Flink
	tempTables map[objectID]*tableDef
	tempViews  map[objectID]*viewDef
	tempFuncs  map[objectID]*funcDef
	// sysFuncs are the temporary system functions (CREATE TEMPORARY
	// SYSTEM FUNCTION, and a Go program's sql.WithFunction and
	// Session.RegisterFunction) by upper-case name: they resolve before
	// the built-in functions.
	sysFuncs map[string]*funcDef
	// fnMaps are the functions a call may name, by the database names
	// resolve against (functions): built when needed, dropped when a
	// function, database or catalog is created or dropped.
	fnMaps map[dbPath]map[string]expr.Function
}

func newCatalog() *catalog {
	c := &catalog{
		catalogs:   map[string]*memCatalog{builtinCatalog: newMemCatalog(builtinCatalog, builtinDatabase)},
		tempTables: map[objectID]*tableDef{},
		tempViews:  map[objectID]*viewDef{},
		tempFuncs:  map[objectID]*funcDef{},
		sysFuncs:   map[string]*funcDef{},
	}
	c.setCurrent(dbPath{builtinCatalog, builtinDatabase})
	return c
}

func (c *catalog) setCurrent(d dbPath) {
	c.cur, c.res = d, d.lower()
}

// within makes names resolve against home (a view's database) until the
// function it returns is called. As Flink expands a view's query when
// the view is created, the view's names mean what they meant then, in
// the database current then.
func (c *catalog) within(home dbPath) func() {
	prev := c.res
	c.res = home
	return func() { c.res = prev }
}

// changed drops what was derived from the functions and databases.
func (c *catalog) changed() { c.fnMaps = nil }

// qualify gives name (1 to 3 parts, parser.SplitName) the current catalog
// and database it lacks, as Flink's CatalogManager.qualifyIdentifier.
func (c *catalog) qualify(name string) objectID {
	id := c.written(name, c.res)
	return objectID{strings.ToLower(id.cat), strings.ToLower(id.db), strings.ToLower(id.name)}
}

// written is name qualified by in's catalog and database where it lacks
// them, the parts as written, for messages.
func (c *catalog) written(name string, in dbPath) objectID {
	parts := parser.SplitName(name)
	id := objectID{cat: in.cat, db: in.db}
	n := len(parts)
	switch {
	case n >= 3:
		id.cat, id.db = parts[n-3], parts[n-2]
	case n == 2:
		id.db = parts[0]
	}
	id.name = parts[n-1]
	return id
}

// lastPart is a name's object part, as written.
func lastPart(name string) string {
	parts := parser.SplitName(name)
	return parts[len(parts)-1]
}

// database is the database at d (lower case), nil when it or its catalog
// does not exist.
func (c *catalog) database(d dbPath) *database {
	if mc := c.catalogs[d.cat]; mc != nil {
		return mc.dbs[d.db]
	}
	return nil
}

// databaseOf is the database of a DDL statement's object name, or an
// error at pos naming the catalog or database that does not exist.
func (c *catalog) databaseOf(name string, pos parser.Pos) (*database, error) {
	w := c.written(name, c.cur)
	mc := c.catalogs[strings.ToLower(w.cat)]
	if mc == nil {
		return nil, parser.Errorf(pos, "catalog '%s' does not exist", w.cat)
	}
	db := mc.dbs[strings.ToLower(w.db)]
	if db == nil {
		return nil, parser.Errorf(pos, "database '%s' does not exist in catalog '%s'", w.db, mc.name)
	}
	return db, nil
}

// lookup resolves a table's or view's name: a temporary object first,
// then the catalog's, as Flink's CatalogManager.getTable. key identifies
// the object (its full name) for the maps of plans.
func (c *catalog) lookup(name string) (td *tableDef, v *viewDef, key string) {
	id := c.qualify(name)
	if td := c.tempTables[id]; td != nil {
		return td, nil, id.key()
	}
	if v := c.tempViews[id]; v != nil {
		return nil, v, id.key()
	}
	if db := c.database(id.dbPath()); db != nil {
		return db.tables[id.name], db.views[id.name], id.key()
	}
	return nil, nil, id.key()
}

// table is the table name resolves to, nil if it is not a table.
func (c *catalog) table(name string) *tableDef {
	td, _, _ := c.lookup(name)
	return td
}

// view is the view name resolves to, nil if it is not a view.
func (c *catalog) view(name string) *viewDef {
	_, v, _ := c.lookup(name)
	return v
}

// exists reports whether CREATE [TEMPORARY] TABLE|VIEW name would meet an
// object of that name: a temporary one for a temporary object, else one
// of the catalog. Tables and views share their names, as in Flink; a
// temporary object may hide a permanent one of the same name.
func (c *catalog) exists(name string, temporary bool) bool {
	id := c.qualify(name)
	if temporary {
		return c.tempTables[id] != nil || c.tempViews[id] != nil
	}
	db := c.database(id.dbPath())
	return db != nil && (db.tables[id.name] != nil || db.views[id.name] != nil)
}

// names are the tables and views of the database name resolves into,
// temporary ones included, sorted: what an error offers for a name it
// did not find.
func (c *catalog) names(name string) []string {
	names, _ := c.listTables(c.qualify(name).dbPath(), false)
	return names
}

// listTables are the names of the tables and views (views only: only
// views) of database d, temporary ones included, sorted; ok is false when
// d does not exist and has no temporary objects.
func (c *catalog) listTables(d dbPath, views bool) (names []string, ok bool) {
	seen := map[string]bool{}
	add := func(name string) {
		if k := strings.ToLower(name); !seen[k] {
			seen[k] = true
			names = append(names, name)
		}
	}
	for id, td := range c.tempTables {
		if id.dbPath() == d && !views {
			add(lastPart(td.ddl.Name))
			ok = true
		}
	}
	for id, v := range c.tempViews {
		if id.dbPath() == d {
			add(lastPart(v.ddl.Name))
			ok = true
		}
	}
	if db := c.database(d); db != nil {
		ok = true
		if !views {
			for _, td := range db.tables {
				add(lastPart(td.ddl.Name))
			}
		}
		for _, v := range db.views {
			add(lastPart(v.ddl.Name))
		}
	}
	sort.Strings(names)
	return names, ok
}

// functions are the user-defined functions a call may name in the
// database names resolve against, by upper-case name, for expression
// compilers. As Flink's FunctionCatalog resolves a name of one part: a
// temporary system function, then a built-in one (the compiler's, after
// these), then a temporary catalog function of the database, then its
// catalog function (weir refuses catalog functions named as built-in
// ones). A name of two or three parts (db.f, cat.db.f) is a catalog
// function of that database, temporary first.
func (c *catalog) functions() map[string]expr.Function {
	if m, ok := c.fnMaps[c.res]; ok {
		return m
	}
	m := map[string]expr.Function{}
	for ck, mc := range c.catalogs {
		for dk, db := range mc.dbs {
			for fk, d := range db.funcs {
				c.addFunction(m, objectID{ck, dk, fk}, d)
			}
		}
	}
	for id, d := range c.tempFuncs {
		c.addFunction(m, id, d)
	}
	// CURRENT_DATABASE() is the database names resolve against: a
	// function of the session's state, so bound here (a system function
	// of the name replaces it)
	db := c.res.db
	m["CURRENT_DATABASE"] = &expr.ScalarFunction{Returns: types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: true},
		Eval: func([]types.Value) (types.Value, error) { return types.StringValue(db), nil }}
	for k, d := range c.sysFuncs {
		m[k] = d.fn
	}
	if len(m) == 0 {
		m = nil
	}
	if c.fnMaps == nil {
		c.fnMaps = map[dbPath]map[string]expr.Function{}
	}
	c.fnMaps[c.res] = m
	return m
}

// addFunction adds catalog function d at id to m under the names that
// reach it from the database names resolve against. A temporary
// function is added after the permanent ones and so replaces one of
// the same name.
func (c *catalog) addFunction(m map[string]expr.Function, id objectID, d *funcDef) {
	m[strings.ToUpper(parser.JoinName(id.cat, id.db, id.name))] = d.fn
	if id.cat == c.res.cat {
		m[strings.ToUpper(parser.JoinName(id.db, id.name))] = d.fn
		if id.db == c.res.db {
			m[strings.ToUpper(id.name)] = d.fn
		}
	}
}
