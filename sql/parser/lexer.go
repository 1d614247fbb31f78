package parser

import (
	"fmt"
	"strings"
)

// Pos is a place in the statement text: 1-based line and column (columns
// count bytes, as Flink's parser counts characters of ASCII text).
type Pos struct{ Line, Col int }

func (p Pos) String() string { return fmt.Sprintf("line %d, column %d", p.Line, p.Col) }

// Error is a syntax or planning error at a place in the text.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Errorf returns an *Error at pos.
func Errorf(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tQuotedIdent
	tString
	tNumber
	tOp // punctuation and operators
)

type token struct {
	kind tokKind
	text string // identifier (unquoted), string value (unescaped), number text, op
	pos  Pos
	end  int // byte offset just past the token
	off  int // byte offset of the token
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tString:
		return "'" + strings.ReplaceAll(t.text, "'", "''") + "'"
	case tQuotedIdent:
		return "`" + t.text + "`"
	}
	return `"` + t.text + `"`
}

// lex splits text into tokens, dropping comments and white space.
func lex(text string) ([]token, error) {
	var toks []token
	line, lineStart := 1, 0
	i := 0
	pos := func(off int) Pos { return Pos{Line: line, Col: off - lineStart + 1} }
	for i < len(text) {
		c := text[i]
		switch {
		case c == '\n':
			i++
			line, lineStart = line+1, i
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
			continue
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			for i < len(text) && text[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			start := pos(i)
			i += 2
			for {
				if i+1 >= len(text) {
					return nil, Errorf(start, "unterminated comment")
				}
				if text[i] == '*' && text[i+1] == '/' {
					i += 2
					break
				}
				if text[i] == '\n' {
					line, lineStart = line+1, i+1
				}
				i++
			}
			continue
		}
		start, off := pos(i), i
		switch {
		case isIdentStart(c):
			j := i
			for j < len(text) && isIdentPart(text[j]) {
				j++
			}
			toks = append(toks, token{kind: tIdent, text: text[i:j], pos: start, off: off, end: j})
			i = j
		case c == '`':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(text) {
					return nil, Errorf(start, "unterminated quoted identifier")
				}
				if text[j] == '`' {
					if j+1 < len(text) && text[j+1] == '`' {
						b.WriteByte('`')
						j += 2
						continue
					}
					j++
					break
				}
				if text[j] == '\n' {
					return nil, Errorf(start, "quoted identifier spans lines")
				}
				b.WriteByte(text[j])
				j++
			}
			toks = append(toks, token{kind: tQuotedIdent, text: b.String(), pos: start, off: off, end: j})
			i = j
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(text) {
					return nil, Errorf(start, "unterminated string literal")
				}
				if text[j] == '\'' {
					if j+1 < len(text) && text[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					j++
					break
				}
				if text[j] == '\n' {
					line, lineStart = line+1, j+1
				}
				b.WriteByte(text[j])
				j++
			}
			toks = append(toks, token{kind: tString, text: b.String(), pos: start, off: off, end: j})
			i = j
		case isDigit(c) || (c == '.' && i+1 < len(text) && isDigit(text[i+1])):
			j := i
			for j < len(text) && isDigit(text[j]) {
				j++
			}
			if j < len(text) && text[j] == '.' {
				j++
				for j < len(text) && isDigit(text[j]) {
					j++
				}
			}
			if j < len(text) && (text[j] == 'e' || text[j] == 'E') {
				k := j + 1
				if k < len(text) && (text[k] == '+' || text[k] == '-') {
					k++
				}
				if k < len(text) && isDigit(text[k]) {
					for k < len(text) && isDigit(text[k]) {
						k++
					}
					j = k
				}
			}
			toks = append(toks, token{kind: tNumber, text: text[i:j], pos: start, off: off, end: j})
			i = j
		default:
			op := ""
			for _, o := range []string{"<>", "<=", ">=", "!=", "||", "=>", "::"} {
				if strings.HasPrefix(text[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				if !strings.ContainsRune("(),;.=<>+-*/%[]?{}|", rune(c)) {
					return nil, Errorf(start, "unexpected character %q", rune(c))
				}
				op = text[i : i+1]
			}
			toks = append(toks, token{kind: tOp, text: op, pos: start, off: off, end: i + len(op)})
			i += len(op)
		}
	}
	toks = append(toks, token{kind: tEOF, pos: pos(i), off: i, end: i})
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}
func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) }
func isDigit(c byte) bool     { return c >= '0' && c <= '9' }

// Substitute replaces ${NAME} with vars[NAME] (Flink's SQL client and the
// Nexmark scripts use such variables). An unknown variable is an error at
// its line and column.
func Substitute(text string, vars map[string]string) (string, error) {
	if !strings.Contains(text, "${") {
		return text, nil
	}
	var b strings.Builder
	line, col := 1, 1
	for i := 0; i < len(text); {
		if strings.HasPrefix(text[i:], "${") {
			end := strings.IndexByte(text[i:], '}')
			if end < 0 {
				return "", Errorf(Pos{line, col}, "unterminated ${...} variable")
			}
			name := text[i+2 : i+end]
			v, ok := vars[name]
			if !ok {
				return "", Errorf(Pos{line, col}, "undefined variable ${%s} (define it with --define %s=VALUE)", name, name)
			}
			b.WriteString(v)
			i += end + 1
			col += end + 1
			continue
		}
		if text[i] == '\n' {
			line, col = line+1, 0
		}
		b.WriteByte(text[i])
		i++
		col++
	}
	return b.String(), nil
}
