package planner

import (
	"github.com/weirstream/weir/sql/expr"

	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// Option configures a Session or Run.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	vars          map[string]string
	jobOpts       []weir.Option
	parallelism   int
	checkpointDir string
	interval      time.Duration
	stdout        io.Writer
	logDir        string
	name          string
}

// Define sets the value of a ${name} variable of the statements.
func Define(name, value string) Option {
	return optionFunc(func(c *config) { c.vars[name] = value })
}

// JobOptions are passed to weir.NewJob for the jobs the session plans
// (state backend, restarts, metrics and control addresses...).
func JobOptions(opts ...weir.Option) Option {
	return optionFunc(func(c *config) { c.jobOpts = append(c.jobOpts, opts...) })
}

// Parallelism is the jobs' default parallelism (SET
// 'parallelism.default' overrides it).
func Parallelism(n int) Option { return optionFunc(func(c *config) { c.parallelism = n }) }

// Checkpointing makes the jobs checkpoint every interval into dir.
func Checkpointing(interval time.Duration, dir string) Option {
	return optionFunc(func(c *config) { c.interval, c.checkpointDir = interval, dir })
}

// Stdout is where SELECT results, SHOW, DESCRIBE and EXPLAIN print, and
// where 'print' tables write (default os.Stdout).
func Stdout(w io.Writer) Option { return optionFunc(func(c *config) { c.stdout = w }) }

// LogDir is the embedded log's directory for 'weir-log' tables.
func LogDir(dir string) Option { return optionFunc(func(c *config) { c.logDir = dir }) }

// JobName names the planned job (default "sql").
func JobName(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// Session is a SQL session: a catalog of tables and views and the
// settings of SET. It is not safe for concurrent use.
type Session struct {
	cfg  config
	cat  *catalog
	sets map[string]string
	// set plans the INSERT INTO and SELECT statements that one Exec
	// returns, which run as one job (a statement set): as Flink's planner
	// optimizes a statement set as a whole, a table or view they all read
	// is read once (source and sub-plan reuse, reuse.go). Any other
	// statement (DDL, SET) starts a new one, so a later plan sees it.
	set *planner
	// plan is the planner's Config: its rules' switches.
	plan Config
}

// NewSession returns an empty session.
func NewSession(opts ...Option) *Session {
	s := &Session{cfg: config{vars: map[string]string{}, stdout: os.Stdout, name: "sql"}, cat: newCatalog(), sets: map[string]string{}}
	for _, o := range opts {
		o.apply(&s.cfg)
	}
	return s
}

func (s *Session) parallelism() int {
	if v, ok := s.sets["parallelism.default"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return max(s.cfg.parallelism, 1)
}

func (s *Session) settings() connector.Settings {
	return connector.Settings{
		Parallelism:   s.parallelism(),
		CheckpointDir: s.cfg.checkpointDir,
		Checkpointing: s.cfg.checkpointDir != "" && s.cfg.interval > 0,
		LogDir:        s.cfg.logDir,
		Stdout:        s.cfg.stdout,
	}
}

// Statement is a planned statement that runs in a job: an INSERT INTO or
// a SELECT whose rows print as a changelog.
type Statement struct {
	root *rel
	// sink builds the statement's sink on the job.
	sink func(b *builder, s *weir.Stream[types.Row]) error
	text string
	// query is set for a SELECT (its rows print, or go to Subscribe).
	query bool
	// feed, when set, is the rel whose stream the sink (or the INSERT's
	// cast ahead of it) reads and is done with when its call returns, so
	// that feed's operator may lend it rows (lend.go).
	feed *rel
}

// IsQuery reports whether the statement is a SELECT, whose rows print as
// a changelog unless Subscribe takes them.
func (st *Statement) IsQuery() bool { return st.query }

// Explain prints the statement's plan: one operator per line, inputs
// indented below, each with its changelog mode.
func (st *Statement) Explain() string {
	var b strings.Builder
	explain(&b, st.root, "", reuseIDs(st.root))
	return b.String()
}

func explain(b *strings.Builder, r *rel, indent string, reuse *explainReuse) {
	if id, ok := reuse.ids[r.canonical()]; ok {
		// a reused sub-plan is printed once, as Flink prints it
		if reuse.printed[id] {
			fmt.Fprintf(b, "%sReused(reference_id=[%d])\n", indent, id)
			return
		}
		reuse.printed[id] = true
		fmt.Fprintf(b, "%s%s(reuse_id=[%d]), changelogMode=[%s]\n", indent, r.op, id, modeKinds(r.mode))
	} else {
		fmt.Fprintf(b, "%s%s, changelogMode=[%s]\n", indent, r.op, modeKinds(r.mode))
	}
	next := "   " + strings.ReplaceAll(indent, "+- ", "   ")
	if indent == "" {
		next = "+- "
	} else {
		next = strings.Repeat(" ", len(indent)) + "+- "
	}
	for _, in := range r.inputs {
		explain(b, in, next, reuse)
	}
}

func modeKinds(m types.ChangelogMode) string {
	switch m {
	case types.InsertOnly:
		return "I"
	case types.Upsert:
		return "I,UA,D"
	}
	return "I,UB,UA,D"
}

// Exec parses text and runs its DDL, SET, SHOW, DESCRIBE and EXPLAIN
// statements now; it returns the INSERT INTO and SELECT statements planned,
// in order, for the caller to run in one job (Job).
func (s *Session) Exec(text string) ([]*Statement, error) {
	text, err := parser.Substitute(text, s.cfg.vars)
	if err != nil {
		return nil, err
	}
	stmts, err := parser.Parse(text)
	if err != nil {
		return nil, err
	}
	var out []*Statement
	s.set = nil
	defer func() { s.set = nil }()
	for _, st := range stmts {
		switch st.(type) {
		case *parser.Insert, *parser.StatementSet, *parser.QueryStmt:
		default:
			s.set = nil
		}
		planned, err := s.exec(st)
		if err != nil {
			return nil, err
		}
		out = append(out, planned...)
	}
	return out, nil
}

// setPlanner is the planner shared by the statements of the job being
// planned (Session.set), or a planner of its own outside Exec.
func (s *Session) setPlanner() *planner {
	if s.set == nil {
		s.set = &planner{s: s, cfg: s.plan}
	}
	return s.set
}

func (s *Session) exec(st parser.Stmt) ([]*Statement, error) {
	w := s.cfg.stdout
	switch st := st.(type) {
	case *parser.CreateTable:
		return nil, s.cat.createTable(st)
	case *parser.CreateView:
		// plan it now so that errors point at the view's definition
		if _, err := (&planner{s: s, cfg: s.plan}).planQuery(st.Query); err != nil {
			return nil, err
		}
		return nil, s.cat.createView(st)
	case *parser.Drop:
		return nil, s.cat.drop(st)
	case *parser.Set:
		if st.Key == "" {
			keys := make([]string, 0, len(s.sets))
			for k := range s.sets {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(w, "'%s' = '%s'\n", k, s.sets[k])
			}
			return nil, nil
		}
		s.sets[st.Key] = st.Value
		return nil, nil
	case *parser.Reset:
		if st.Key == "" {
			s.sets = map[string]string{}
		} else {
			delete(s.sets, st.Key)
		}
		return nil, nil
	case *parser.ShowTables:
		for _, n := range s.cat.names() {
			isView := s.cat.views[normName(n)] != nil
			if isView == st.Views || !st.Views {
				fmt.Fprintln(w, n)
			}
		}
		return nil, nil
	case *parser.Describe:
		text, err := s.Describe(st.Name, st.Pos)
		if err != nil {
			return nil, err
		}
		fmt.Fprint(w, text)
		return nil, nil
	case *parser.Explain:
		planned, err := s.exec(st.Stmt)
		s.set = nil // the explained statements do not run
		if err != nil {
			return nil, err
		}
		for _, p := range planned {
			fmt.Fprint(w, p.Explain())
		}
		return nil, nil
	case *parser.Insert:
		p, err := s.planInsert(st)
		if err != nil {
			return nil, err
		}
		return []*Statement{p}, nil
	case *parser.StatementSet:
		var out []*Statement
		for _, ins := range st.Inserts {
			p, err := s.planInsert(ins)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
		return out, nil
	case *parser.QueryStmt:
		r, err := s.setPlanner().planQuery(st.Query)
		if err != nil {
			return nil, err
		}
		return []*Statement{s.printStatement(r, parser.QueryString(st.Query))}, nil
	}
	return nil, parser.Errorf(st.StmtPos(), "statement %T is not supported", st)
}

// Describe prints the columns of a table or view.
func (s *Session) Describe(name string, pos parser.Pos) (string, error) {
	n := normName(name)
	if td := s.cat.tables[n]; td != nil {
		wm := ""
		if td.rowtime >= 0 {
			wm = td.cols[td.rowtime].Name
		}
		return describeSchema(td.cols, td.ddl.PrimaryKey, wm), nil
	}
	if v := s.cat.views[n]; v != nil {
		r, err := (&planner{s: s, cfg: s.plan}).planTableName(name, pos)
		if err != nil {
			return "", err
		}
		_ = v
		return describeSchema(r.sc.Cols, nil, ""), nil
	}
	return "", parser.Errorf(pos, "table or view '%s' not found", name)
}

// Query plans one SELECT (for the shell and programs): its result columns
// and a statement that prints nothing but whose rows the caller gets by
// Subscribe.
func (s *Session) Query(text string) (types.Schema, *Statement, error) {
	text, err := parser.Substitute(text, s.cfg.vars)
	if err != nil {
		return nil, nil, err
	}
	stmts, err := parser.Parse(text)
	if err != nil {
		return nil, nil, err
	}
	if len(stmts) != 1 {
		return nil, nil, fmt.Errorf("want one SELECT, got %d statements", len(stmts))
	}
	q, ok := stmts[0].(*parser.QueryStmt)
	if !ok {
		return nil, nil, parser.Errorf(stmts[0].StmtPos(), "want a SELECT")
	}
	r, err := (&planner{s: s, cfg: s.plan}).planQuery(q.Query)
	if err != nil {
		return nil, nil, err
	}
	return r.sc.Schema(), &Statement{root: r, text: text, query: true}, nil
}

// Subscribe sets fn as the statement's sink: it gets the result's rows
// (changelog kinds included), from several goroutines at parallelism > 1.
func (st *Statement) Subscribe(fn func(rows []types.Row) error) {
	st.feed = nil
	st.sink = func(b *builder, s *weir.Stream[types.Row]) error {
		weir.To(s, weir.SinkFunc[types.Row](func(_ context.Context, rows []types.Row) error { return fn(rows) }), b.uid("collect"))
		return nil
	}
}

// SubscribeLent is Subscribe for a function that is done with the rows
// when it returns, as a weir.SinkWriter's Write: the rows, and their
// Values, are only valid during the call (the plan may reuse their memory
// for the next rows), so fn copies what it keeps. It spares the plan an
// allocation per result row.
func (st *Statement) SubscribeLent(fn func(rows []types.Row) error) {
	st.Subscribe(fn)
	st.feed = st.root
}

// Schema is the statement's result columns.
func (st *Statement) Schema() types.Schema { return st.root.sc.Schema() }

// Updating reports whether the statement's result updates (is not
// insert-only).
func (st *Statement) Updating() bool { return st.root.mode != types.InsertOnly }

// printStatement prints a SELECT's rows as a changelog, Flink's print
// format: "+I[1, a]".
func (s *Session) printStatement(r *rel, text string) *Statement {
	w := s.cfg.stdout
	var mu sync.Mutex
	sc := r.sc
	st := &Statement{root: r, text: text, query: true}
	st.sink = func(b *builder, in *weir.Stream[types.Row]) error {
		weir.To(in, weir.SinkFunc[types.Row](func(_ context.Context, rows []types.Row) error {
			var sb strings.Builder
			for _, row := range rows {
				sb.WriteString(FormatRow(row, sc.Schema()))
				sb.WriteByte('\n')
			}
			mu.Lock()
			defer mu.Unlock()
			_, err := io.WriteString(w, sb.String())
			return err
		}), b.uid("print"))
		return nil
	}
	return st
}

// FormatRow prints a row as Flink's print connector does: "+I[1, a]".
func FormatRow(row types.Row, sc types.Schema) string {
	var b strings.Builder
	b.WriteString(row.Kind.String())
	b.WriteByte('[')
	for i, v := range row.Values {
		if i > 0 {
			b.WriteString(", ")
		}
		if i < len(sc) {
			b.WriteString(expr.FormatValue(v, sc[i].Type))
		}
	}
	b.WriteByte(']')
	return b.String()
}

// planInsert plans INSERT INTO t [(cols)] query: the query's columns are
// cast to the sink's types, missing columns are NULL, and the sink must
// accept the query's changelog.
func (s *Session) planInsert(ins *parser.Insert) (*Statement, error) {
	if ins.Overwrite {
		return nil, parser.Errorf(ins.Pos, "INSERT OVERWRITE is not supported on streams")
	}
	n := normName(ins.Table)
	td := s.cat.tables[n]
	if td == nil {
		if s.cat.views[n] != nil {
			return nil, parser.Errorf(ins.TablePos, "cannot INSERT INTO view '%s'", ins.Table)
		}
		return nil, parser.Errorf(ins.TablePos, "table '%s' not found (known: %s)", ins.Table, strings.Join(s.cat.names(), ", "))
	}
	q, err := s.setPlanner().planQuery(ins.Query)
	if err != nil {
		return nil, err
	}
	// the sink's physical columns, and which query column feeds each
	sinkCols := make([]expr.Column, len(td.physical))
	for j, pi := range td.physical {
		sinkCols[j] = td.cols[pi]
		sinkCols[j].Type.TimeAttr = 0
	}
	from := make([]int, len(sinkCols))
	if len(ins.Columns) == 0 {
		if len(q.sc.Cols) != len(sinkCols) {
			return nil, parser.Errorf(ins.Pos, "column types of query result and sink for '%s' do not match: the query has %d columns (%s), the sink %d (%s)",
				ins.Table, len(q.sc.Cols), strings.Join(q.sc.Schema().Names(), ", "), len(sinkCols), strings.Join((&expr.Scope{Cols: sinkCols}).Schema().Names(), ", "))
		}
		for j := range from {
			from[j] = j
		}
	} else {
		if len(ins.Columns) != len(q.sc.Cols) {
			return nil, parser.Errorf(ins.Pos, "INSERT INTO '%s' names %d columns but the query has %d", ins.Table, len(ins.Columns), len(q.sc.Cols))
		}
		for j := range from {
			from[j] = -1
		}
		for i, c := range ins.Columns {
			found := false
			for j, sc := range sinkCols {
				if strings.EqualFold(sc.Name, c) {
					from[j], found = i, true
				}
			}
			if !found {
				return nil, parser.Errorf(ins.Pos, "column '%s' is not a physical column of '%s'", c, ins.Table)
			}
		}
	}
	fns := make([]func(types.Value) types.Value, len(sinkCols))
	identity := len(q.sc.Cols) == len(sinkCols)
	for j, sc := range sinkCols {
		if from[j] < 0 {
			if sc.Type.NotNull {
				return nil, parser.Errorf(ins.Pos, "column '%s' of '%s' is NOT NULL and not given", sc.Name, ins.Table)
			}
			identity = false
			continue
		}
		if from[j] != j {
			identity = false
		}
		qt := q.sc.Cols[from[j]].Type
		if qt.Kind == sc.Type.Kind && qt.Precision == sc.Type.Precision && qt.Scale == sc.Type.Scale {
			continue
		}
		fn, err := expr.CastFn(qt, sc.Type)
		if err != nil {
			return nil, parser.Errorf(ins.Pos, "column '%s' of '%s': %v", sc.Name, ins.Table, err)
		}
		fns[j] = fn
		identity = false
	}
	ct := &connector.Table{Name: td.ddl.Name, Options: td.options, Settings: s.settings(), PrimaryKey: td.pk}
	for _, c := range sinkCols {
		ct.Schema = append(ct.Schema, types.Field{Name: c.Name, Type: c.Type})
	}
	sink, err := connector.CreateSink(ct)
	if err != nil {
		return nil, parser.Errorf(ins.TablePos, "%v", err)
	}
	if q.mode > sink.Accepts {
		if sink.Accepts == types.InsertOnly {
			return nil, parser.Errorf(ins.Pos, "table sink '%s' doesn't support consuming update changes which is produced by node %s", ins.Table, q.updater)
		}
	}
	root := &rel{op: fmt.Sprintf("Sink(table=[%s], fields=[%s])", td.ddl.Name, strings.Join((&expr.Scope{Cols: sinkCols}).Schema().Names(), ", ")),
		sc: &expr.Scope{Cols: sinkCols}, mode: q.mode, inputs: []*rel{q}, updater: q.updater, bounded: q.bounded}
	st := &Statement{root: root, text: parser.QueryString(ins.Query)}
	nq := len(sinkCols)
	if sink.Lends || !identity {
		// the cast, or else the sink, is done with q's rows when it returns
		st.feed = q
	}
	st.sink = func(b *builder, in *weir.Stream[types.Row]) error {
		if !identity {
			rows := ringRows(b.job)
			in = weir.FlatMapWith(in, func() func(types.Row, func(types.Row)) {
				var ring *rowRing
				if sink.Lends {
					// the sink is chained to the cast and done with its rows
					// when Write returns: lend them (lend.go)
					ring = newRowRing(nq, rows)
				}
				return func(row types.Row, emit func(types.Row)) {
					var vs []types.Value
					if ring != nil {
						vs = ring.next()
					} else {
						vs = make([]types.Value, nq)
					}
					for j, fn := range fns {
						switch {
						case from[j] < 0:
							vs[j] = types.NullValue
						case fn == nil:
							vs[j] = row.Values[from[j]]
						default:
							vs[j] = fn(row.Values[from[j]])
						}
					}
					emit(types.Row{Kind: row.Kind, Values: vs})
				}
			}, b.uid("sink-cast"))
		}
		opts := append([]weir.Option{b.uid("sink-" + td.ddl.Name)}, sink.Options...)
		weir.To(in, sink.Sink, opts...)
		return nil
	}
	root.build = func(b *builder) (*weir.Stream[types.Row], error) { return b.stream(q) }
	return st, nil
}

// Job builds one job that runs statements (a statement set).
func (s *Session) Job(stmts []*Statement) (*weir.Job, error) {
	opts := []weir.Option{weir.Parallelism(s.parallelism())}
	if s.cfg.checkpointDir != "" && s.cfg.interval > 0 {
		opts = append(opts, weir.Checkpointing(s.cfg.interval, s.cfg.checkpointDir))
	}
	name := s.cfg.name
	if v, ok := s.sets["pipeline.name"]; ok {
		name = v
	}
	opts = append(opts, s.cfg.jobOpts...)
	job := weir.NewJob(name, opts...)
	b := &builder{job: job, settings: s.settings(), built: map[*rel]*weir.Stream[types.Row]{}}
	for _, st := range stmts {
		if err := b.prepare(st.root); err != nil {
			return nil, err
		}
	}
	for _, st := range stmts {
		if st.sink == nil {
			return nil, fmt.Errorf("statement %q has no sink (call Subscribe)", st.text)
		}
		in, err := b.stream(st.root)
		if err != nil {
			return nil, err
		}
		if err := st.sink(b, in); err != nil {
			return nil, err
		}
	}
	feeds := map[*rel]bool{}
	for _, st := range stmts {
		if st.feed != nil {
			feeds[st.feed.canonical()] = true
		}
	}
	for r := range b.keysOnly {
		feeds[r.canonical()] = true
	}
	b.settleLending(feeds)
	return job, nil
}

// Plan runs text's DDL and plans all its INSERT INTO and SELECT statements
// into one job (nil when there is nothing to run).
func (s *Session) Plan(text string) (*weir.Job, error) {
	stmts, err := s.Exec(text)
	if err != nil || len(stmts) == 0 {
		return nil, err
	}
	return s.Job(stmts)
}

// Run executes a SQL script as Flink's `sql-client.sh -f` does: DDL is
// registered, every INSERT INTO (and SELECT, printed as a changelog) runs
// in one job, and Run returns when the job ends (bounded inputs done) or
// ctx is cancelled.
func Run(ctx context.Context, text string, opts ...Option) error {
	s := NewSession(opts...)
	job, err := s.Plan(text)
	if err != nil || job == nil {
		return err
	}
	return job.Run(ctx)
}
