package planner

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// Session is a SQL session: catalogs of tables, views and functions (the
// built-in default_catalog.default_database current at first, as in
// Flink) and the settings of SET. It is not safe for concurrent use.
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
	for _, f := range s.cfg.funcs {
		s.cat.sysFuncs[strings.ToUpper(f.name)] = &f
	}
	return s
}

// Setting is the value SET gave key in this session, if it gave one.
func (s *Session) Setting(key string) (string, bool) {
	v, ok := s.sets[key]
	return v, ok
}

func (s *Session) parallelism() int {
	if v, ok := s.sets["parallelism.default"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return max(s.cfg.parallelism, 1)
}

// stateBackend reads Flink's state backend settings: 'state.backend.type'
// (or the older 'state.backend') 'rocksdb' or 'forst' (Flink's
// disaggregated backend), and weir's 'pebble', keep keyed state in Pebble
// (weir.PebbleState) under 'state.backend.rocksdb.localdir' (else the
// session's StateDir, else a new directory in the temporary directory)
// with 'state.backend.rocksdb.memory.fixed-per-slot' as the memory budget
// of the process (all its operators: a weir process is one slot); 'hashmap' (and the older 'filesystem' and
// 'jobmanager') and weir's 'heap' keep it in memory.
// 'execution.checkpointing.incremental' (or the older
// 'state.backend.incremental') = 'true' makes Pebble's checkpoints
// incremental; 'state.backend.changelog.enabled' = 'true' makes them
// changelog checkpoints (weir.StateChangelog), materialized at most
// 'state.backend.changelog.periodic-materialize.interval' apart (Flink's
// default, 10 min; '0' or a negative interval: by size alone).
func (s *Session) stateBackend() ([]weir.JobOption, error) {
	var opts []weir.JobOption
	typ, ok := s.sets["state.backend.type"]
	key := "state.backend.type"
	if !ok {
		typ, ok = s.sets["state.backend"]
		key = "state.backend"
	}
	if ok {
		switch strings.ToLower(strings.TrimSpace(typ)) {
		case "rocksdb", "forst", "pebble":
			dir := s.sets["state.backend.rocksdb.localdir"]
			if dir == "" {
				dir = s.cfg.stateDir
			}
			if dir == "" {
				var err error
				if dir, err = os.MkdirTemp("", "weir-state-"); err != nil {
					return nil, fmt.Errorf("SET '%s' = '%s': a state directory: %w", key, typ, err)
				}
			}
			var budget int64
			if v, ok := s.sets["state.backend.rocksdb.memory.fixed-per-slot"]; ok {
				n, err := connector.ParseMemorySize(v)
				if err != nil {
					return nil, fmt.Errorf("SET 'state.backend.rocksdb.memory.fixed-per-slot' = '%s': %w", v, err)
				}
				budget = n
			}
			opts = append(opts, weir.PebbleState(dir, budget))
		case "hashmap", "heap", "filesystem", "jobmanager":
			opts = append(opts, weir.HeapState())
		default:
			return nil, fmt.Errorf("SET '%s' = '%s': unknown state backend (rocksdb, forst or pebble keep state in Pebble; hashmap or heap in memory)", key, typ)
		}
	}
	for _, k := range []string{"execution.checkpointing.incremental", "state.backend.incremental"} {
		if v, ok := s.sets[k]; ok {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true":
				opts = append(opts, weir.IncrementalCheckpoints())
			case "false":
			default:
				return nil, fmt.Errorf("SET '%s' = '%s': want true or false", k, v)
			}
			break
		}
	}
	if v, ok := s.sets["state.backend.changelog.enabled"]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			interval := 10 * time.Minute
			if iv, ok := s.sets["state.backend.changelog.periodic-materialize.interval"]; ok {
				d, err := connector.ParseDuration(iv)
				if err != nil {
					if n, perr := strconv.ParseInt(strings.TrimSpace(iv), 10, 64); perr == nil && n <= 0 {
						d, err = 0, nil
					}
				}
				if err != nil {
					return nil, fmt.Errorf("SET 'state.backend.changelog.periodic-materialize.interval' = '%s': %w", iv, err)
				}
				interval = max(d, 0)
			}
			opts = append(opts, weir.StateChangelog(interval))
		case "false":
		default:
			return nil, fmt.Errorf("SET 'state.backend.changelog.enabled' = '%s': want true or false", v)
		}
	}
	return opts, nil
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
	if ok, err := s.cat.execCatalog(st, w); ok {
		return nil, err
	}
	switch st := st.(type) {
	case *parser.CreateTable:
		if st.AsQuery != nil {
			return s.createTableAs(st)
		}
		if st.Like != nil {
			if s.cat.exists(st.Name, st.Temporary) && st.IfNotExists {
				return nil, nil
			}
			merged, err := s.cat.mergeLike(st)
			if err != nil {
				return nil, err
			}
			return nil, s.cat.createTable(merged)
		}
		return nil, s.cat.createTable(st)
	case *parser.CreateView:
		// plan it now so that errors point at the view's definition
		if _, err := (&planner{s: s, cfg: s.plan}).planQuery(st.Query); err != nil {
			return nil, err
		}
		return nil, s.cat.createView(st)
	case *parser.Drop:
		if st.Function {
			return nil, s.cat.dropFunction(st)
		}
		return nil, s.cat.drop(st)
	case *parser.CreateFunction:
		return nil, s.cat.createFunction(st, s.loadWasm)
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

// Describe prints the columns of a table or view: name has 1 to 3 parts
// (table, db.table, catalog.db.table), resolved as in a query.
func (s *Session) Describe(name string, pos parser.Pos) (string, error) {
	td, v, _ := s.cat.lookup(name)
	if td != nil {
		wm := ""
		if td.rowtime >= 0 {
			wm = td.cols[td.rowtime].Name
		}
		return describeSchema(td.cols, td.ddl.PrimaryKey, wm), nil
	}
	if v != nil {
		r, err := (&planner{s: s, cfg: s.plan}).planTableName(name, pos)
		if err != nil {
			return "", err
		}
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

// Job builds one job that runs statements (a statement set).
func (s *Session) Job(stmts []*Statement) (*weir.Job, error) {
	opts := []weir.JobOption{weir.Parallelism(s.parallelism())}
	if s.cfg.checkpointDir != "" && s.cfg.interval > 0 {
		opts = append(opts, weir.Checkpointing(s.cfg.interval, s.cfg.checkpointDir))
	}
	name := s.cfg.name
	if v, ok := s.sets["pipeline.name"]; ok {
		name = v
	}
	opts = append(opts, s.cfg.jobOpts...)
	backend, err := s.stateBackend()
	if err != nil {
		return nil, err
	}
	opts = append(opts, backend...) // a SET in the script wins over the command line's
	job := weir.NewJob(name, opts...)
	ttl, err := s.stateTTL()
	if err != nil {
		return nil, err
	}
	b := &builder{job: job, settings: s.settings(), built: map[*rel]*weir.Stream[types.Row]{}, pebble: job.StateBackend() == "pebble", noSlabs: s.plan.DisableSlabRows,
		noRecycle: s.plan.DisableRowRecycling, noTopOne: s.plan.DisableTopOneState, noSlices: s.plan.DisableSlicedWindows, ttl: ttl}
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
	for r := range b.borrowed {
		feeds[r.canonical()] = true
	}
	b.settleLending(feeds)
	var noUB []*rel
	for _, st := range stmts {
		if st.noUB != nil {
			noUB = append(noUB, st.noUB)
		}
	}
	b.settleUpdateBefore(noUB)
	b.settleSlabs()
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

// The mini-batch options, Flink's names.
const (
	miniBatchEnabled = "table.exec.mini-batch.enabled"
	miniBatchLatency = "table.exec.mini-batch.allow-latency"
	miniBatchSize    = "table.exec.mini-batch.size"
)

// stateTTL is Flink's 'table.exec.state.ttl' (idle state retention): how
// long the state of a group aggregation, a regular join, a Top-N or
// deduplication and a changelog normalization keeps a key's entry after
// it was last written, in processing time (0, the default: for ever). As
// Flink's, it is a state TTL (weir.TTL): an expired entry is never read
// again, and a key that comes back starts over.
func (s *Session) stateTTL() (time.Duration, error) {
	v, ok := s.sets["table.exec.state.ttl"]
	if !ok {
		return 0, nil
	}
	d, err := connector.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("SET 'table.exec.state.ttl' = '%s': want a duration ('1 h', '30 min', '0 ms' for none)", v)
	}
	return d, nil
}

// miniBatch is the mini-batch size of group aggregations: 0 when
// 'table.exec.mini-batch.enabled' is not 'true'. As Flink, enabled needs
// 'allow-latency' (a positive duration) and 'size' (a positive count). A
// mini-batch in weir is the rows of an input batch that arrived together,
// at most size: it never waits for more, so it adds no latency, and
// allow-latency is an upper bound it keeps trivially.
func (s *Session) miniBatch(pos parser.Pos) (int, error) {
	on, ok := s.sets[miniBatchEnabled]
	if !ok || !strings.EqualFold(on, "true") {
		if ok && !strings.EqualFold(on, "false") {
			return 0, parser.Errorf(pos, "'%s' = '%s': want true or false", miniBatchEnabled, on)
		}
		return 0, nil
	}
	lat, ok := s.sets[miniBatchLatency]
	if !ok {
		return 0, parser.Errorf(pos, "'%s' is 'true' but '%s' is not set (Flink requires it)", miniBatchEnabled, miniBatchLatency)
	}
	if d, err := connector.ParseDuration(lat); err != nil || d <= 0 {
		return 0, parser.Errorf(pos, "'%s' = '%s': want a positive duration ('2 s', '500 ms')", miniBatchLatency, lat)
	}
	size, ok := s.sets[miniBatchSize]
	if !ok {
		return 0, parser.Errorf(pos, "'%s' is 'true' but '%s' is not set (Flink requires it)", miniBatchEnabled, miniBatchSize)
	}
	n, err := strconv.Atoi(size)
	if err != nil || n <= 0 {
		return 0, parser.Errorf(pos, "'%s' = '%s': want a positive number of rows", miniBatchSize, size)
	}
	return n, nil
}
