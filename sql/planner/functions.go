package planner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/wasmudf"
)

// funcDef is a user-defined function of the session: registered by the
// Go program (system: it resolves before the built-ins, as Flink's
// temporary system functions do) or by CREATE FUNCTION.
type funcDef struct {
	name   string // as created, for SHOW USER FUNCTIONS
	fn     expr.Function
	system bool
	class  string // the CREATE FUNCTION's identifier
}

// WithFunction registers f under name for the sessions of this option, as
// Flink's createTemporarySystemFunction: SQL calls it by name (case
// insensitive), before a built-in function of the same name.
func WithFunction(name string, f expr.Function) Option {
	return optionFunc(func(c *config) {
		c.funcs = append(c.funcs, funcDef{name: name, fn: f, system: true})
	})
}

// RegisterFunction registers f under name in the session, as the
// Function option does.
func (s *Session) RegisterFunction(name string, f expr.Function) error {
	if f == nil || name == "" {
		return fmt.Errorf("sql: RegisterFunction needs a name and a function")
	}
	s.cat.sysFuncs[strings.ToUpper(name)] = &funcDef{name: name, fn: f, system: true}
	s.cat.changed()
	return nil
}

// createFunction runs CREATE [TEMPORARY [SYSTEM]] FUNCTION: the
// identifier names a class registered in weir (expr.RegisterClass),
// Flink's Java UDF with a Go twin, or a WebAssembly module. As Flink: a
// temporary system function is the session's, by a name of one part; a
// temporary function is a temporary object of its database (which need
// not exist), hiding a catalog function of the same name; a catalog
// function is its database's, which must exist.
func (c *catalog) createFunction(cf *parser.CreateFunction, load func(cf *parser.CreateFunction, name string) (expr.Function, error)) error {
	name := strings.ToLower(lastPart(cf.Name))
	key := strings.ToUpper(name)
	id := c.qualify(cf.Name)
	var put func(*funcDef)
	switch {
	case cf.System:
		// Flink takes the name's last part, its catalog and database
		// parts having no meaning for a system function
		if _, dup := c.sysFuncs[key]; dup {
			if cf.IfNotExists {
				return nil
			}
			return parser.Errorf(cf.Pos, "function %s already exists", name)
		}
		put = func(d *funcDef) { c.sysFuncs[key] = d }
	case cf.Temporary:
		if _, dup := c.tempFuncs[id]; dup {
			if cf.IfNotExists {
				return nil
			}
			return parser.Errorf(cf.Pos, "temporary function %s already exists", name)
		}
		put = func(d *funcDef) { c.tempFuncs[id] = d }
	default:
		db, err := c.databaseOf(cf.Name, cf.Pos)
		if err != nil {
			return err
		}
		if _, dup := db.funcs[id.name]; dup {
			if cf.IfNotExists {
				return nil
			}
			return parser.Errorf(cf.Pos, "function %s already exists", name)
		}
		put = func(d *funcDef) { db.funcs[id.name] = d }
	}
	if !cf.System && expr.IsBuiltin(key) {
		return parser.Errorf(cf.Pos, "function %s is a built-in function; a catalog function of that name would never be called (CREATE TEMPORARY SYSTEM FUNCTION replaces it)", name)
	}
	var f expr.Function
	switch cf.Language {
	case "", "JAVA", "SCALA":
		var ok bool
		if f, ok = expr.LookupClass(cf.Identifier); !ok {
			return parser.Errorf(cf.IdentPos, "function %s: no Go function is registered for class '%s' (weir runs no Java: a program registers a Go twin with sql.RegisterClass)", name, cf.Identifier)
		}
	case "WASM":
		var err error
		if f, err = load(cf, name); err != nil {
			return err
		}
	default:
		return parser.Errorf(cf.Pos, "function %s: LANGUAGE %s is not supported (weir resolves a JAVA or SCALA class name in its registry of Go functions, and runs WASM modules)", name, cf.Language)
	}
	put(&funcDef{name: name, fn: f, system: cf.System, class: cf.Identifier})
	c.changed()
	return nil
}

// dropFunction runs DROP [TEMPORARY [SYSTEM]] FUNCTION. As Flink, DROP
// FUNCTION drops a catalog function and refuses a name that a temporary
// function holds; DROP TEMPORARY FUNCTION drops a temporary function,
// DROP TEMPORARY SYSTEM FUNCTION a temporary system function.
func (c *catalog) dropFunction(d *parser.Drop) error {
	name := strings.ToLower(lastPart(d.Name))
	id := c.qualify(d.Name)
	switch {
	case d.System:
		key := strings.ToUpper(name)
		if _, ok := c.sysFuncs[key]; !ok {
			if d.IfExists {
				return nil
			}
			return parser.Errorf(d.Pos, "temporary system function %s does not exist", name)
		}
		delete(c.sysFuncs, key)
	case d.Temporary:
		if _, ok := c.tempFuncs[id]; !ok {
			if d.IfExists {
				return nil
			}
			return parser.Errorf(d.Pos, "temporary function %s does not exist", name)
		}
		delete(c.tempFuncs, id)
	default:
		if _, ok := c.tempFuncs[id]; ok {
			return parser.Errorf(d.Pos, "function %s is a temporary function: DROP TEMPORARY FUNCTION drops it (Flink refuses DROP FUNCTION while a temporary one has its name)", name)
		}
		db := c.database(id.dbPath())
		if db == nil || db.funcs[id.name] == nil {
			if d.IfExists {
				return nil
			}
			if _, ok := c.sysFuncs[strings.ToUpper(name)]; ok && len(parser.SplitName(d.Name)) == 1 {
				return parser.Errorf(d.Pos, "function %s is a temporary system function: DROP TEMPORARY SYSTEM FUNCTION drops it", name)
			}
			return parser.Errorf(d.Pos, "function %s does not exist", name)
		}
		delete(db.funcs, id.name)
	}
	c.changed()
	return nil
}

// showFunctions prints SHOW [USER] FUNCTIONS [FROM db] [LIKE ...]: the
// temporary system functions, the temporary and catalog functions of the
// database (the current one unless FROM names one), and the built-in
// ones unless user; sorted, in lower case, as Flink lists them.
func (c *catalog) showFunctions(w io.Writer, sf *parser.ShowFunctions) error {
	d := c.res
	if sf.Database != "" {
		var err error
		if d, _, err = c.databaseNamed(sf.Database, sf.Pos); err != nil {
			return err
		}
	}
	var names []string
	for _, f := range c.sysFuncs {
		names = append(names, strings.ToLower(f.name))
	}
	for id, f := range c.tempFuncs {
		if id.dbPath() == d {
			names = append(names, f.name)
		}
	}
	if db := c.database(d); db != nil {
		for _, f := range db.funcs {
			names = append(names, f.name)
		}
	}
	if !sf.User {
		for _, f := range expr.ScalarFunctions {
			names = append(names, strings.ToLower(f))
		}
		for f := range expr.AggregateNames {
			names = append(names, strings.ToLower(f))
		}
	}
	sort.Strings(names)
	for i, n := range names {
		if i > 0 && names[i-1] == n || !sf.Like.Match(n) {
			continue
		}
		fmt.Fprintln(w, n)
	}
	return nil
}

// FunctionDir is the directory the paths of WebAssembly functions are
// resolved in (CREATE FUNCTION f AS 'udfs/f.wasm' LANGUAGE WASM): a path
// must name a file inside it (default: the current directory).
func FunctionDir(dir string) Option { return optionFunc(func(c *config) { c.funcDir = dir }) }

// loadWasm loads a LANGUAGE WASM function: 'path.wasm' with the export
// named as the function, or 'path.wasm#export'. The path is confined to
// the function directory.
func (s *Session) loadWasm(cf *parser.CreateFunction, name string) (expr.Function, error) {
	path, export, _ := strings.Cut(cf.Identifier, "#")
	if export == "" {
		export = name
	}
	if !filepath.IsLocal(path) {
		return nil, parser.Errorf(cf.IdentPos, "function %s: the module path '%s' must be relative and inside the function directory", name, path)
	}
	dir := s.cfg.funcDir
	if dir == "" {
		dir = "."
	}
	f, err := os.OpenInRoot(dir, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, parser.Errorf(cf.IdentPos, "function %s: no module %s in the function directory (weir sql --function-dir, default the current directory)", name, path)
	}
	if err != nil {
		return nil, parser.Errorf(cf.IdentPos, "function %s: %v", name, err)
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, parser.Errorf(cf.IdentPos, "function %s: reading %s: %v", name, path, err)
	}
	timeout := wasmudf.DefaultCallTimeout
	if v, ok := s.Setting(wasmudf.TimeoutKey); ok {
		if timeout, err = connector.ParseDuration(v); err != nil || timeout <= 0 {
			return nil, parser.Errorf(cf.Pos, "'%s' = '%s' is not a positive duration", wasmudf.TimeoutKey, v)
		}
	}
	fn, err := wasmudf.Load(b, path, export, wasmudf.Options{CallTimeout: timeout})
	if err != nil {
		return nil, parser.Errorf(cf.IdentPos, "function %s: %v", name, err)
	}
	return fn, nil
}
