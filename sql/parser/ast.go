package parser

import "github.com/weirstream/weir/sql/types"

// Stmt is a statement.
type Stmt interface{ StmtPos() Pos }

// Expr is a scalar expression.
type Expr interface{ ExprPos() Pos }

// Query is a SELECT or a set operation of SELECTs.
type Query interface{ QueryPos() Pos }

// TableExpr is an item of a FROM clause.
type TableExpr interface{ TablePos() Pos }

// Statements.
type (
	// CreateTable is CREATE [TEMPORARY] TABLE [IF NOT EXISTS].
	CreateTable struct {
		Pos         Pos
		Name        string
		Temporary   bool
		IfNotExists bool
		Columns     []ColumnDef
		Watermark   *Watermark
		PrimaryKey  []string
		// PartitionedBy are the columns of PARTITIONED BY (...).
		PartitionedBy []string
		Options       []Option
		Comment       string
		// Like is CREATE TABLE ... LIKE source [(options)]; AsQuery is
		// CREATE TABLE ... AS query (CTAS).
		Like    *TableLike
		AsQuery Query
	}
	// CreateView is CREATE [TEMPORARY] VIEW [IF NOT EXISTS] v [(cols)] AS query.
	CreateView struct {
		Pos         Pos
		Name        string
		Temporary   bool
		IfNotExists bool
		Columns     []string
		Query       Query
	}
	// CreateFunction is CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT
	// EXISTS] f AS 'identifier' [LANGUAGE lang] [USING JAR 'path', ...]:
	// the identifier is a class name (Flink's Java UDF, resolved in weir's
	// registry of Go functions) or, with LANGUAGE WASM, a module's path.
	CreateFunction struct {
		Pos         Pos
		Name        string
		Temporary   bool
		System      bool
		IfNotExists bool
		Identifier  string
		IdentPos    Pos
		Language    string // upper case; "" when not given
		Using       []string
	}
	// Drop is DROP [TEMPORARY [SYSTEM]] TABLE|VIEW|FUNCTION [IF EXISTS] name.
	Drop struct {
		Pos       Pos
		View      bool
		Function  bool
		Temporary bool
		System    bool // TEMPORARY SYSTEM FUNCTION
		IfExists  bool
		Name      string
	}
	// Insert is INSERT INTO|OVERWRITE t [(cols)] query.
	Insert struct {
		Pos       Pos
		Table     string
		TablePos  Pos
		Overwrite bool
		Columns   []string
		Query     Query
	}
	// QueryStmt is a query on its own (SELECT ...).
	QueryStmt struct{ Query Query }
	// ShowTables is SHOW TABLES (and SHOW VIEWS when Views is set)
	// [FROM|IN [catalog.]database] [[NOT] LIKE|ILIKE 'pattern'].
	ShowTables struct {
		Pos      Pos
		Views    bool
		Database string // "": the current one
		Like     *ShowLike
	}
	// ShowFunctions is SHOW [USER] FUNCTIONS [FROM|IN
	// [catalog.]database] [[NOT] LIKE|ILIKE 'pattern'].
	ShowFunctions struct {
		Pos      Pos
		User     bool
		Database string // "": the current one
		Like     *ShowLike
	}
	// Describe is DESCRIBE|DESC name.
	Describe struct {
		Pos  Pos
		Name string
	}
	// Explain is EXPLAIN [PLAN FOR] statement.
	Explain struct {
		Pos  Pos
		Stmt Stmt
	}
	// Set is SET 'k' = 'v' (or SET alone, to list).
	Set struct {
		Pos        Pos
		Key, Value string
	}
	// Reset is RESET ['k'].
	Reset struct {
		Pos Pos
		Key string
	}
	// StatementSet is EXECUTE STATEMENT SET BEGIN ... END (or BEGIN
	// STATEMENT SET; ... END;): its INSERTs run as one job.
	StatementSet struct {
		Pos     Pos
		Inserts []*Insert
	}
)

func (s *CreateTable) StmtPos() Pos    { return s.Pos }
func (s *CreateView) StmtPos() Pos     { return s.Pos }
func (s *Drop) StmtPos() Pos           { return s.Pos }
func (s *CreateFunction) StmtPos() Pos { return s.Pos }
func (s *Insert) StmtPos() Pos         { return s.Pos }
func (s *QueryStmt) StmtPos() Pos      { return s.Query.QueryPos() }
func (s *ShowTables) StmtPos() Pos     { return s.Pos }
func (s *ShowFunctions) StmtPos() Pos  { return s.Pos }
func (s *Describe) StmtPos() Pos       { return s.Pos }
func (s *Explain) StmtPos() Pos        { return s.Pos }
func (s *Set) StmtPos() Pos            { return s.Pos }
func (s *Reset) StmtPos() Pos          { return s.Pos }
func (s *StatementSet) StmtPos() Pos   { return s.Pos }

// TableLike is LIKE source [(INCLUDING|EXCLUDING|OVERWRITING what, ...)]
// of a CREATE TABLE: what is ALL, CONSTRAINTS, GENERATED, OPTIONS,
// WATERMARKS, PARTITIONS or METADATA.
type TableLike struct {
	Pos     Pos
	Name    string
	Options []LikeOption
}

// LikeOption is one merging strategy of LIKE.
type LikeOption struct {
	Pos  Pos
	Mode string // INCLUDING, EXCLUDING, OVERWRITING
	What string
}

// ColumnDef is a column of CREATE TABLE: physical (Type set), computed
// (Computed set) or metadata (Metadata set).
type ColumnDef struct {
	Pos      Pos
	Name     string
	Type     types.Type
	Computed Expr
	// Metadata is set for `c TYPE METADATA [FROM 'key'] [VIRTUAL]`; the key
	// is the column name when FROM is absent.
	Metadata string
	Virtual  bool
	Comment  string
}

// Watermark is WATERMARK FOR column AS expr.
type Watermark struct {
	Pos    Pos
	Column string
	Expr   Expr
}

// Option is one 'key' = 'value' of a WITH clause.
type Option struct {
	Pos        Pos
	Key, Value string
}

// Queries.
type (
	// Select is one SELECT block.
	Select struct {
		Pos      Pos
		Distinct bool
		Items    []SelectItem
		From     TableExpr // nil for SELECT without FROM
		Where    Expr
		GroupBy  []Expr // a *GroupingSets is GROUPING SETS, ROLLUP or CUBE
		Having   Expr
		OrderBy  []OrderItem
		Limit    Expr
	}
	// SetOp is UNION [ALL] (also INTERSECT, EXCEPT).
	SetOp struct {
		Pos         Pos
		Op          string // UNION, INTERSECT, EXCEPT
		All         bool
		Left, Right Query
	}
	// Values is VALUES (row), (row)...
	Values struct {
		Pos  Pos
		Rows [][]Expr
	}
)

// With is WITH name [(cols)] AS (query), ... body: common table
// expressions, visible in the body (and in the later ones).
type With struct {
	Pos     Pos
	Names   []string
	Columns [][]string
	Queries []Query
	Body    Query
}

func (q *With) QueryPos() Pos   { return q.Pos }
func (q *Select) QueryPos() Pos { return q.Pos }
func (q *SetOp) QueryPos() Pos  { return q.Pos }
func (q *Values) QueryPos() Pos { return q.Pos }

// SelectItem is one item of a select list: an expression with an optional
// alias, or a star (`*`, `t.*`).
type SelectItem struct {
	Pos    Pos
	Expr   Expr
	Alias  string
	Star   bool
	StarOf string // t in t.*
	// StarField is the rest of a composite's path: [r] in t.r.*, whose
	// item is the fields of the ROW t.r (r.* alone is too when no table
	// is called r)
	StarField []string
	AliasPos  Pos
}

// OrderItem is an ORDER BY item.
type OrderItem struct {
	Expr       Expr
	Desc       bool
	NullsFirst *bool
}

// Table expressions.
type (
	// TableRef names a table or view, with an optional alias and
	// FOR SYSTEM_TIME AS OF.
	TableRef struct {
		Pos   Pos
		Name  string
		Alias string
		AsOf  Expr
		Hints []string
	}
	// SubqueryTable is (query) [AS] alias [(column, ...)].
	SubqueryTable struct {
		Pos     Pos
		Query   Query
		Alias   string
		Columns []string // the alias's column names, if it names them
	}
	// Join is left JOIN right ON cond (or a comma, a CROSS JOIN).
	Join struct {
		Pos         Pos
		Kind        JoinKind
		Left, Right TableExpr
		On          Expr
		Using       []string
	}
	// TableFunc is TABLE(fn(args)) [AS alias]: the window TVFs.
	TableFunc struct {
		Pos   Pos
		Name  string
		Args  []Expr
		Alias string
		// Lateral marks LATERAL TABLE(f(args)) and UNNEST(x), evaluated
		// per row of the join's left side; Columns are the alias's
		// column names, AS t(a, b).
		Lateral bool
		Columns []string
	}
)

func (t *TableRef) TablePos() Pos      { return t.Pos }
func (t *SubqueryTable) TablePos() Pos { return t.Pos }
func (t *Join) TablePos() Pos          { return t.Pos }
func (t *TableFunc) TablePos() Pos     { return t.Pos }

// JoinKind is the kind of a join.
type JoinKind uint8

const (
	InnerJoin JoinKind = iota
	LeftJoin
	RightJoin
	FullJoin
	CrossJoin
)

func (k JoinKind) String() string {
	return [...]string{"INNER", "LEFT", "RIGHT", "FULL", "CROSS"}[k]
}

// Expressions.
type (
	// Ident is a (possibly dotted) name: a column, t.column or a field
	// access column.field.field.
	Ident struct {
		Pos   Pos
		Parts []string
	}
	// Literal is a number, string, boolean or NULL literal.
	Literal struct {
		Pos  Pos
		Kind LitKind
		Text string // number text or string value
	}
	// TypedLiteral is DATE '...', TIME '...', TIMESTAMP '...'.
	TypedLiteral struct {
		Pos  Pos
		Type string
		Text string
	}
	// IntervalLit is INTERVAL [-]'n' UNIT [TO UNIT].
	IntervalLit struct {
		Pos      Pos
		Text     string
		Unit, To string // YEAR MONTH DAY HOUR MINUTE SECOND (singular)
		Negative bool
	}
	// Unary is -x, +x or NOT x.
	Unary struct {
		Pos Pos
		Op  string
		X   Expr
	}
	// Binary is x op y: arithmetic, comparison, AND, OR, ||.
	Binary struct {
		Pos  Pos
		Op   string
		L, R Expr
	}
	// Call is a function call, aggregate or window function.
	Call struct {
		Pos      Pos
		Name     string // upper case
		Args     []Expr
		Distinct bool
		Star     bool // COUNT(*)
		Over     *Over
		Filter   Expr
		// Nulls is "RESPECT" or "IGNORE" when the arguments end with
		// RESPECT NULLS or IGNORE NULLS (ARRAY_AGG)
		Nulls string
	}
	// Case is CASE [operand] WHEN ... THEN ... [ELSE ...] END.
	Case struct {
		Pos     Pos
		Operand Expr
		Whens   []When
		Else    Expr
	}
	// Cast is CAST(x AS type) or TRY_CAST.
	Cast struct {
		Pos  Pos
		X    Expr
		Type types.Type
		Try  bool
	}
	// Between is x [NOT] BETWEEN lo AND hi.
	Between struct {
		Pos       Pos
		X, Lo, Hi Expr
		Not       bool
	}
	// In is x [NOT] IN (list).
	In struct {
		Pos  Pos
		X    Expr
		List []Expr
		Not  bool
	}
	// Like is x [NOT] LIKE|SIMILAR TO pattern [ESCAPE e].
	Like struct {
		Pos        Pos
		X, Pattern Expr
		Escape     Expr
		Not        bool
		Similar    bool
	}
	// Is is x IS [NOT] NULL|TRUE|FALSE|UNKNOWN and IS [NOT] DISTINCT FROM y.
	Is struct {
		Pos  Pos
		X    Expr
		What string // NULL, TRUE, FALSE, UNKNOWN, DISTINCT
		From Expr   // for DISTINCT FROM
		Not  bool
	}
	// Index is x[i]: an array element or a map value.
	Index struct {
		Pos      Pos
		X, Index Expr
	}
	// Field is (expr).name: field access on an expression.
	Field struct {
		Pos  Pos
		X    Expr
		Name string
	}
	// Extract is EXTRACT(unit FROM x).
	Extract struct {
		Pos  Pos
		Unit string
		X    Expr
	}
	// Descriptor is DESCRIPTOR(col, ...), an argument of a window TVF.
	Descriptor struct {
		Pos  Pos
		Cols []string
	}
	// TableArg is TABLE t, an argument of a window TVF.
	TableArg struct {
		Pos   Pos
		Table TableExpr
	}
	// NamedArg is name => x in a TVF call.
	NamedArg struct {
		Pos  Pos
		Name string
		X    Expr
	}
	// Subquery is a query used as an expression: x [NOT] IN (SELECT ...)
	// (X, Not), EXISTS (SELECT ...), or a scalar subquery (Op "").
	Subquery struct {
		Pos   Pos
		Query Query
		Op    string // "", EXISTS, IN
		X     Expr   // IN's operand
		Not   bool   // NOT IN
	}
	// GroupingSets is GROUPING SETS (...), ROLLUP (...) or CUBE (...), an
	// item of GROUP BY. Each element is a parenthesized list of
	// expressions (one expression unparenthesized, () empty); an element
	// of GROUPING SETS may instead be one nested *GroupingSets.
	GroupingSets struct {
		Pos   Pos
		Kind  string // GROUPING SETS, ROLLUP, CUBE
		Elems [][]Expr
	}
)

func (e *Ident) ExprPos() Pos        { return e.Pos }
func (e *Literal) ExprPos() Pos      { return e.Pos }
func (e *TypedLiteral) ExprPos() Pos { return e.Pos }
func (e *IntervalLit) ExprPos() Pos  { return e.Pos }
func (e *Unary) ExprPos() Pos        { return e.Pos }
func (e *Binary) ExprPos() Pos       { return e.Pos }
func (e *Call) ExprPos() Pos         { return e.Pos }
func (e *Case) ExprPos() Pos         { return e.Pos }
func (e *Cast) ExprPos() Pos         { return e.Pos }
func (e *Between) ExprPos() Pos      { return e.Pos }
func (e *In) ExprPos() Pos           { return e.Pos }
func (e *Like) ExprPos() Pos         { return e.Pos }
func (e *Is) ExprPos() Pos           { return e.Pos }
func (e *Index) ExprPos() Pos        { return e.Pos }
func (e *Field) ExprPos() Pos        { return e.Pos }
func (e *Extract) ExprPos() Pos      { return e.Pos }
func (e *Descriptor) ExprPos() Pos   { return e.Pos }
func (e *TableArg) ExprPos() Pos     { return e.Pos }
func (e *NamedArg) ExprPos() Pos     { return e.Pos }
func (e *Subquery) ExprPos() Pos     { return e.Pos }
func (e *GroupingSets) ExprPos() Pos { return e.Pos }

// LitKind is the kind of a Literal.
type LitKind uint8

const (
	NumberLit LitKind = iota
	StringLit
	BoolLit
	NullLit
)

// When is one WHEN ... THEN ... of a CASE.
type When struct{ Cond, Then Expr }

// Over is a window of an OVER clause.
type Over struct {
	Pos         Pos
	PartitionBy []Expr
	OrderBy     []OrderItem
	Frame       *Frame
	// Ref names a window of the WINDOW clause (OVER w) until the parser
	// resolves it.
	Ref string
}

// Frame is ROWS|RANGE BETWEEN start AND end.
type Frame struct {
	Rows       bool
	Start, End Bound
}

// Bound is a frame bound.
type Bound struct {
	Kind   BoundKind
	Offset Expr // for Preceding and Following
}

// BoundKind is the kind of a frame bound.
type BoundKind uint8

const (
	UnboundedPreceding BoundKind = iota
	Preceding
	CurrentRow
	Following
	UnboundedFollowing
)
