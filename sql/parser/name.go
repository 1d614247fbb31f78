package parser

import "strings"

// Object names (tables, views, functions) are 1, 2 or 3 parts, as in
// Flink: `t`, `db.t`, `cat.db.t`. The AST keeps such a name in one string,
// the parts joined by dots; a part that holds a dot or a back quote is
// back-quoted there (`db`.`my.table` is "db.`my.table`"), so that
// SplitName gives the parts back. A name of one plain part is its text,
// as it always was.

// MaxNameParts is how many parts an object name may have:
// catalog.database.object.
const MaxNameParts = 3

// JoinName joins the parts of a qualified name (see SplitName).
func JoinName(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		if p == "" || strings.ContainsAny(p, ".`") {
			b.WriteString("`" + strings.ReplaceAll(p, "`", "``") + "`")
		} else {
			b.WriteString(p)
		}
	}
	return b.String()
}

// SplitName returns the parts of a name JoinName joined.
func SplitName(name string) []string {
	var parts []string
	var b strings.Builder
	quoted := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case quoted && c == '`' && i+1 < len(name) && name[i+1] == '`':
			b.WriteByte('`')
			i++
		case c == '`':
			quoted = !quoted
		case !quoted && c == '.':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(parts, b.String())
}

// NameString prints a name as SQL: each part back-quoted where it must be.
func NameString(name string) string {
	parts := SplitName(name)
	for i, p := range parts {
		parts[i] = quoteIdent(p)
	}
	return strings.Join(parts, ".")
}

// objectName reads an object's name: 1 to 3 parts, each bare or
// back-quoted.
func (p *parser) objectName(what string) (string, Pos) {
	first, pos := p.ident(what)
	parts := []string{first}
	for p.isOp(".") && (p.peek(1).kind == tIdent || p.peek(1).kind == tQuotedIdent) {
		t := p.next()
		if len(parts) == MaxNameParts {
			panic(bail{Errorf(t.pos, "a name has at most %d parts (catalog.database.object)", MaxNameParts)})
		}
		part, _ := p.ident(what)
		parts = append(parts, part)
	}
	return JoinName(parts...), pos
}
