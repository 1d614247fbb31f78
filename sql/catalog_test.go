package sql_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/sql"
)

// catalogJob is a job file as Flink users write them: it starts with its
// catalog and database, then names tables by one, two and three parts.
const catalogJob = `
CREATE CATALOG shop WITH ('type' = 'generic_in_memory', 'default-database' = 'raw');
USE CATALOG shop;
CREATE DATABASE IF NOT EXISTS reporting COMMENT 'derived tables';
USE raw;

CREATE TABLE orders (id BIGINT, customer_id BIGINT, amount BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '${IN}/orders.csv', 'format' = 'csv');
CREATE TABLE shop.raw.customers (id BIGINT, name STRING)
  WITH ('connector' = 'filesystem', 'path' = '${IN}/customers.csv', 'format' = 'csv');
CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';

USE reporting;
CREATE TABLE big_orders (name STRING, amount BIGINT, a_count BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '${OUT}', 'format' = 'csv');
CREATE TEMPORARY VIEW big AS SELECT * FROM raw.orders WHERE amount >= 10;

INSERT INTO reporting.big_orders
SELECT c.name, o.amount, raw.count_char(c.name, 'a')
FROM big AS o JOIN shop.raw.customers AS c ON o.customer_id = c.id;

SELECT name FROM shop.raw.customers WHERE id = 2;
`

// A Flink-style file that begins with CREATE CATALOG, USE CATALOG,
// CREATE DATABASE and USE, and uses qualified names, runs through sql.Run
// and writes the rows it should.
func TestCatalogJobFile(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(in, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("orders.csv", "1,1,5\n2,1,20\n3,2,30\n4,3,40\n")
	write("customers.csv", "1,ada\n2,bob\n")
	var printed lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := sql.Run(ctx, catalogJob, sql.Define("IN", in), sql.Define("OUT", out), sql.Stdout(&printed), sql.Parallelism(2))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, strings.Fields(string(b))...)
	}
	slices.Sort(rows)
	// order 1 is under 10, order 4's customer does not exist
	if want := []string{"ada,20,2", "bob,30,0"}; !slices.Equal(rows, want) {
		t.Errorf("big_orders has %q, want %q", rows, want)
	}
	if got := strings.TrimSpace(printed.String()); got != "+I[bob]" {
		t.Errorf("the SELECT printed %q, want +I[bob]", got)
	}
}

// Names resolve where the file's USE statements put them: without its
// USE reporting, big_orders is created in raw, and the INSERT into
// reporting.big_orders finds no such table.
func TestCatalogJobFileNeedsItsUse(t *testing.T) {
	in := t.TempDir()
	for _, f := range []string{"orders.csv", "customers.csv"} {
		if err := os.WriteFile(filepath.Join(in, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := strings.Replace(catalogJob, "USE reporting;", "", 1)
	err := sql.Run(context.Background(), text, sql.Define("IN", in), sql.Define("OUT", t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "table 'reporting.big_orders' not found (known: )") {
		t.Fatalf("got %v, want an error saying reporting.big_orders is not found", err)
	}
}
