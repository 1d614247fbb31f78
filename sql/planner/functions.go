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
	s.cat.funcs[strings.ToUpper(name)] = &funcDef{name: name, fn: f, system: true}
	s.cat.fnMap = nil
	return nil
}

// functions returns the session's user functions by upper-case name, for
// expression compilers.
func (c *catalog) functions() map[string]expr.Function {
	if len(c.funcs) == 0 {
		return nil
	}
	if c.fnMap == nil {
		c.fnMap = make(map[string]expr.Function, len(c.funcs))
		for k, d := range c.funcs {
			c.fnMap[k] = d.fn
		}
	}
	return c.fnMap
}

// createFunction runs CREATE FUNCTION: the identifier names a class
// registered in weir (expr.RegisterClass), Flink's Java UDF with a Go
// twin.
func (c *catalog) createFunction(cf *parser.CreateFunction, load func(cf *parser.CreateFunction, name string) (expr.Function, error)) error {
	key := strings.ToUpper(cf.Name)
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		key = key[i+1:]
	}
	name := strings.ToLower(key)
	if _, dup := c.funcs[key]; dup {
		if cf.IfNotExists {
			return nil
		}
		return parser.Errorf(cf.Pos, "function %s already exists", name)
	}
	if !cf.System && expr.IsBuiltin(key) {
		return parser.Errorf(cf.Pos, "function %s is a built-in function; a catalog function of that name would never be called (CREATE TEMPORARY SYSTEM FUNCTION replaces it)", name)
	}
	switch cf.Language {
	case "", "JAVA", "SCALA":
	case "WASM":
		f, err := load(cf, name)
		if err != nil {
			return err
		}
		c.funcs[key] = &funcDef{name: name, fn: f, system: cf.System, class: cf.Identifier}
		c.fnMap = nil
		return nil
	default:
		return parser.Errorf(cf.Pos, "function %s: LANGUAGE %s is not supported (weir resolves a JAVA or SCALA class name in its registry of Go functions, and runs WASM modules)", name, cf.Language)
	}
	f, ok := expr.LookupClass(cf.Identifier)
	if !ok {
		return parser.Errorf(cf.IdentPos, "function %s: no Go function is registered for class '%s' (weir runs no Java: a program registers a Go twin with sql.RegisterClass)", name, cf.Identifier)
	}
	c.funcs[key] = &funcDef{name: name, fn: f, system: cf.System, class: cf.Identifier}
	c.fnMap = nil
	return nil
}

func (c *catalog) dropFunction(d *parser.Drop) error {
	key := strings.ToUpper(d.Name)
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		key = key[i+1:]
	}
	if _, ok := c.funcs[key]; !ok {
		if d.IfExists {
			return nil
		}
		return parser.Errorf(d.Pos, "function %s does not exist", strings.ToLower(key))
	}
	delete(c.funcs, key)
	c.fnMap = nil
	return nil
}

// showFunctions prints SHOW [USER] FUNCTIONS: the user functions, and
// the built-in ones unless user, sorted, in lower case as Flink lists them.
func (c *catalog) showFunctions(w io.Writer, user bool) {
	var names []string
	for _, d := range c.funcs {
		names = append(names, strings.ToLower(d.name))
	}
	if !user {
		for _, f := range expr.ScalarFunctions {
			names = append(names, strings.ToLower(f))
		}
		for f := range expr.AggregateNames {
			names = append(names, strings.ToLower(f))
		}
	}
	sort.Strings(names)
	for i, n := range names {
		if i > 0 && names[i-1] == n {
			continue
		}
		fmt.Fprintln(w, n)
	}
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
