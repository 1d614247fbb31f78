// Package nexmarksql holds the Nexmark benchmark in Flink's SQL: the DDL
// of nexmark-flink (the 'nexmark' source table of nested ROWs with its
// computed event time and watermark, and the person, auction and bid
// views) and the queries weir's SQL planner runs, for the tests that
// compare them with the hand-written Go queries and for `weir bench
// nexmark --sql`.
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

// Query returns the SELECT of query name ("q5").
func Query(name string) (string, error) {
	b, err := files.ReadFile(name + ".sql")
	if err != nil {
		return "", fmt.Errorf("no SQL for Nexmark query %s (have %s)", name, strings.Join(Queries(), ", "))
	}
	return string(b), nil
}

// Queries lists the queries with SQL, in order (q0, q1, ..., q11).
func Queries() []string {
	ents, _ := files.ReadDir(".")
	var out []string
	for _, e := range ents {
		n := strings.TrimSuffix(e.Name(), ".sql")
		if n != "ddl" {
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
