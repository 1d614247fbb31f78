// Package nexmarksql holds the Nexmark benchmark in Flink's SQL: the DDL
// of nexmark-flink (the 'nexmark' source table of nested ROWs with its
// computed event time and watermark, and the person, auction and bid
// views), the same views over a JSON-lines file of `weir nexmark gen`, and
// the queries, for the tests that compare them with the hand-written Go
// queries and the batch evaluator, and for `weir bench nexmark --sql`.
//
// The query files are Flink's, as a user runs them with `weir sql -f`
// after the DDL: a sink table, maybe a view or a side table, and an INSERT
// INTO the sink, each with a header naming its source and what was
// adapted. [Query] gives the SELECT of the INSERT, [Setup] the statements
// the SELECT needs, [Job] the whole file.
package nexmarksql

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed *.sql
var files embed.FS

// DDL returns the source table and views. It uses the variables ${TPS}
// (events per second of event time), ${EVENTS_NUM} and ${NEXMARK_TABLE}
// (the source table's name: datagen).
func DDL() string {
	b, err := files.ReadFile("ddl.sql")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// DDLJSON returns a source table over a JSON-lines file of Nexmark events
// as `weir nexmark gen` writes them (snake_case fields, times in epoch
// milliseconds) and the person, auction and bid views of DDL over it, with
// Flink's column names. It uses ${EVENTS_FILE}, the file's path.
func DDLJSON() string {
	b, err := files.ReadFile("ddl_json.sql")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Job returns query name's whole file ("q13": its side table, sink table
// and INSERT INTO).
func Job(name string) (string, error) {
	b, err := files.ReadFile(name + ".sql")
	if err != nil || !strings.HasPrefix(name, "q") {
		return "", fmt.Errorf("no SQL for Nexmark query %s (have %s)", name, strings.Join(Queries(), ", "))
	}
	return string(b), nil
}

// Query returns the SELECT of query name ("q5"): the query of the file's
// INSERT INTO its sink table nexmark_qN (a file that is a SELECT alone is
// returned whole).
func Query(name string) (string, error) {
	text, err := Job(name)
	if err != nil {
		return "", err
	}
	_, q := split(name, text)
	return q, nil
}

// Setup returns the statements of query name's file that its SELECT reads
// (q12's view B, q13's side_input table): all but the sink table and the
// INSERT INTO. It is empty for the other queries.
func Setup(name string) (string, error) {
	text, err := Job(name)
	if err != nil {
		return "", err
	}
	s, _ := split(name, text)
	return s, nil
}

// split separates a query file into its setup statements and its SELECT.
// The files end every statement with ';' at the end of a line, which is
// what it relies on.
func split(name, text string) (setup, query string) {
	sink := "nexmark_" + name
	var pre []string
	query = text
	rest := text
	for rest != "" {
		i := strings.Index(rest, ";\n")
		stmt := rest
		if i >= 0 {
			stmt, rest = rest[:i+1], rest[i+2:]
		} else {
			rest = ""
		}
		head := strings.ToUpper(strings.Join(strings.Fields(stripComments(stmt)), " "))
		switch {
		case strings.HasPrefix(head, "INSERT INTO "+strings.ToUpper(sink)+" "):
			body := stripComments(stmt)
			j := strings.Index(strings.ToUpper(body), strings.ToUpper(sink))
			query = strings.TrimSpace(body[j+len(sink):])
		case strings.HasPrefix(head, "CREATE TABLE "+strings.ToUpper(sink)+" "), head == "":
		default:
			pre = append(pre, stmt)
		}
	}
	if query == text {
		return "", text
	}
	return strings.Join(pre, "\n"), query
}

// stripComments drops "--" comment lines (the files put comments on lines
// of their own).
func stripComments(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// Queries lists the queries with SQL, in order (q0, q1, ..., q22).
func Queries() []string {
	ents, _ := files.ReadDir(".")
	var out []string
	for _, e := range ents {
		n := strings.TrimSuffix(e.Name(), ".sql")
		if strings.HasPrefix(n, "q") {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		var a, b int
		fmt.Sscan(out[i][1:], &a)
		fmt.Sscan(out[j][1:], &b)
		return a < b
	})
	return out
}
