package parser

import "strings"

// The statements of catalogs and databases, in Flink's syntax: CREATE,
// DROP and USE of catalogs and databases, and SHOW of them.
type (
	// CreateCatalog is CREATE CATALOG [IF NOT EXISTS] c [COMMENT '...']
	// WITH (...).
	CreateCatalog struct {
		Pos         Pos
		Name        string
		IfNotExists bool
		Comment     string
		Options     []Option
	}
	// DropCatalog is DROP CATALOG [IF EXISTS] c.
	DropCatalog struct {
		Pos      Pos
		Name     string
		IfExists bool
	}
	// CreateDatabase is CREATE DATABASE [IF NOT EXISTS] [c.]db [COMMENT
	// '...'] [WITH (...)]. Name is an object name of 1 or 2 parts.
	CreateDatabase struct {
		Pos         Pos
		Name        string
		IfNotExists bool
		Comment     string
		Options     []Option
	}
	// DropDatabase is DROP DATABASE [IF EXISTS] [c.]db [RESTRICT|CASCADE].
	DropDatabase struct {
		Pos      Pos
		Name     string
		IfExists bool
		Cascade  bool
	}
	// UseCatalog is USE CATALOG c.
	UseCatalog struct {
		Pos  Pos
		Name string
	}
	// Use is USE [c.]db.
	Use struct {
		Pos  Pos
		Name string
	}
	// ShowCatalogs is SHOW CATALOGS [[NOT] LIKE|ILIKE 'pattern'].
	ShowCatalogs struct {
		Pos  Pos
		Like *ShowLike
	}
	// ShowDatabases is SHOW DATABASES [FROM|IN c] [[NOT] LIKE|ILIKE
	// 'pattern'].
	ShowDatabases struct {
		Pos     Pos
		Catalog string
		Like    *ShowLike
	}
	// ShowCurrent is SHOW CURRENT CATALOG or SHOW CURRENT DATABASE.
	ShowCurrent struct {
		Pos      Pos
		Database bool
	}
)

// ShowLike is the [NOT] LIKE|ILIKE 'pattern' that filters what a SHOW
// lists (ILIKE ignores case).
type ShowLike struct {
	Not, ILike bool
	Pattern    string
}

func (s *CreateCatalog) StmtPos() Pos  { return s.Pos }
func (s *DropCatalog) StmtPos() Pos    { return s.Pos }
func (s *CreateDatabase) StmtPos() Pos { return s.Pos }
func (s *DropDatabase) StmtPos() Pos   { return s.Pos }
func (s *UseCatalog) StmtPos() Pos     { return s.Pos }
func (s *Use) StmtPos() Pos            { return s.Pos }
func (s *ShowCatalogs) StmtPos() Pos   { return s.Pos }
func (s *ShowDatabases) StmtPos() Pos  { return s.Pos }
func (s *ShowCurrent) StmtPos() Pos    { return s.Pos }

// createCatalog reads the rest of CREATE CATALOG after CATALOG.
func (p *parser) createCatalog(pos Pos) Stmt {
	cc := &CreateCatalog{Pos: pos}
	cc.IfNotExists = p.acceptKw("IF", "NOT", "EXISTS")
	cc.Name, _ = p.ident("a catalog name")
	if p.acceptKw("COMMENT") {
		cc.Comment, _ = p.stringLit("a comment string")
	}
	// Flink requires WITH: the options name the catalog's type
	p.wantKw("WITH")
	cc.Options = p.options()
	return cc
}

// createDatabase reads the rest of CREATE DATABASE after DATABASE.
func (p *parser) createDatabase(pos Pos) Stmt {
	cd := &CreateDatabase{Pos: pos}
	cd.IfNotExists = p.acceptKw("IF", "NOT", "EXISTS")
	cd.Name = p.databaseName()
	if p.acceptKw("COMMENT") {
		cd.Comment, _ = p.stringLit("a comment string")
	}
	if p.acceptKw("WITH") {
		cd.Options = p.options()
	}
	return cd
}

// dropCatalogOrDatabase reads DROP CATALOG|DATABASE ... after DROP; ok is
// false when neither follows.
func (p *parser) dropCatalogOrDatabase(pos Pos) (Stmt, bool) {
	switch {
	case p.acceptKw("CATALOG"):
		d := &DropCatalog{Pos: pos}
		d.IfExists = p.acceptKw("IF", "EXISTS")
		d.Name, _ = p.ident("a catalog name")
		return d, true
	case p.acceptKw("DATABASE"):
		d := &DropDatabase{Pos: pos}
		d.IfExists = p.acceptKw("IF", "EXISTS")
		d.Name = p.databaseName()
		switch {
		case p.acceptKw("CASCADE"):
			d.Cascade = true
		case p.acceptKw("RESTRICT"):
		}
		return d, true
	}
	return nil, false
}

// use reads USE CATALOG c or USE [c.]db after USE.
func (p *parser) use(pos Pos) Stmt {
	if p.isKw("CATALOG") && p.peek(1).kind != tEOF && !(p.peek(1).kind == tOp && (p.peek(1).text == ";" || p.peek(1).text == ".")) {
		p.next()
		name, _ := p.ident("a catalog name")
		return &UseCatalog{Pos: pos, Name: name}
	}
	if p.isKw("MODULES") && p.peek(1).kind == tIdent {
		panic(bail{Errorf(pos, "USE MODULES is not supported: weir has no modules (its built-in functions are always loaded)")})
	}
	return &Use{Pos: pos, Name: p.databaseName()}
}

// databaseName reads [catalog.]database.
func (p *parser) databaseName() string {
	first, _ := p.ident("a database name")
	parts := []string{first}
	if p.isOp(".") && (p.peek(1).kind == tIdent || p.peek(1).kind == tQuotedIdent) {
		p.next()
		db, _ := p.ident("a database name")
		parts = append(parts, db)
	}
	return JoinName(parts...)
}

// show reads the statement after SHOW.
func (p *parser) show(pos Pos) Stmt {
	switch {
	case p.acceptKw("CATALOGS"):
		return &ShowCatalogs{Pos: pos, Like: p.showLike()}
	case p.acceptKw("CURRENT"):
		if p.acceptKw("CATALOG") {
			return &ShowCurrent{Pos: pos}
		}
		p.wantKw("DATABASE")
		return &ShowCurrent{Pos: pos, Database: true}
	case p.acceptKw("DATABASES"):
		sd := &ShowDatabases{Pos: pos}
		if p.acceptKw("FROM") || p.acceptKw("IN") {
			sd.Catalog, _ = p.ident("a catalog name")
		}
		sd.Like = p.showLike()
		return sd
	case p.acceptKw("TABLES"):
		st := &ShowTables{Pos: pos}
		st.Database, st.Like = p.showFrom(), p.showLike()
		return st
	case p.acceptKw("VIEWS"):
		st := &ShowTables{Pos: pos, Views: true}
		st.Database, st.Like = p.showFrom(), p.showLike()
		return st
	case p.acceptKw("FUNCTIONS"):
		sf := &ShowFunctions{Pos: pos}
		sf.Database, sf.Like = p.showFrom(), p.showLike()
		return sf
	case p.acceptKw("USER", "FUNCTIONS"):
		sf := &ShowFunctions{Pos: pos, User: true}
		sf.Database, sf.Like = p.showFrom(), p.showLike()
		return sf
	}
	p.fail("CATALOGS, CURRENT CATALOG, CURRENT DATABASE, DATABASES, TABLES, VIEWS, FUNCTIONS or USER FUNCTIONS")
	return nil
}

// showFrom reads the [FROM|IN [catalog.]database] of a SHOW.
func (p *parser) showFrom() string {
	if p.acceptKw("FROM") || p.acceptKw("IN") {
		return p.databaseName()
	}
	return ""
}

// showLike reads the [NOT] LIKE|ILIKE 'pattern' of a SHOW.
func (p *parser) showLike() *ShowLike {
	l := &ShowLike{}
	if p.isKw("NOT") && (p.isKwAt(1, "LIKE") || p.isKwAt(1, "ILIKE")) {
		p.next()
		l.Not = true
	}
	switch {
	case p.acceptKw("LIKE"):
	case p.acceptKw("ILIKE"):
		l.ILike = true
	default:
		return nil
	}
	l.Pattern, _ = p.stringLit("a quoted pattern")
	return l
}

// Match reports whether name passes the filter: SQL's LIKE, '%' any
// characters and '_' one, '\' escaping the next character (Flink's
// escape for SHOW ... LIKE); ILIKE ignores case. A nil filter passes all.
func (l *ShowLike) Match(name string) bool {
	if l == nil {
		return true
	}
	pat, s := l.Pattern, name
	if l.ILike {
		pat, s = strings.ToLower(pat), strings.ToLower(s)
	}
	return likeMatch([]rune(pat), []rune(s)) != l.Not
}

func likeMatch(pat, s []rune) bool {
	for len(pat) > 0 {
		switch c := pat[0]; {
		case c == '%':
			for len(pat) > 0 && pat[0] == '%' {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if likeMatch(pat, s[i:]) {
					return true
				}
			}
			return false
		case c == '_':
			if len(s) == 0 {
				return false
			}
		case c == '\\' && len(pat) > 1:
			pat = pat[1:]
			if len(s) == 0 || s[0] != pat[0] {
				return false
			}
		default:
			if len(s) == 0 || s[0] != c {
				return false
			}
		}
		pat, s = pat[1:], s[1:]
	}
	return len(s) == 0
}
