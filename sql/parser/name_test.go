package parser

import (
	"slices"
	"testing"
)

// JoinName and SplitName round-trip any parts, dots and back quotes
// included; a plain name of one part is its own text.
func TestNameParts(t *testing.T) {
	for _, parts := range [][]string{
		{"t"}, {"db", "t"}, {"cat", "db", "t"}, {"my.table"}, {"a`b", "c.d", ""}, {"x y", "``", "."},
	} {
		joined := JoinName(parts...)
		if got := SplitName(joined); !slices.Equal(got, parts) {
			t.Errorf("SplitName(JoinName(%q)) = %q (joined %q)", parts, got, joined)
		}
	}
	if got := JoinName("orders"); got != "orders" {
		t.Errorf("JoinName(orders) = %q", got)
	}
	if got := NameString(JoinName("c 1", "db", "select")); got != "`c 1`.db.`select`" {
		t.Errorf("NameString = %q", got)
	}
}

// SHOW ... LIKE is SQL's LIKE (with '\' escaping, as Flink's SHOW); ILIKE
// ignores case; NOT inverts.
func TestShowLike(t *testing.T) {
	for _, c := range []struct {
		like ShowLike
		name string
		want bool
	}{
		{ShowLike{Pattern: "c%"}, "cat1", true},
		{ShowLike{Pattern: "c%"}, "Cat1", false},
		{ShowLike{Pattern: "c%", ILike: true}, "Cat1", true},
		{ShowLike{Pattern: "%log1"}, "catalog1", true},
		{ShowLike{Pattern: "db_"}, "db1", true},
		{ShowLike{Pattern: "db_"}, "db12", false},
		{ShowLike{Pattern: "db_", Not: true}, "db12", true},
		{ShowLike{Pattern: `a\_b`}, "a_b", true},
		{ShowLike{Pattern: `a\_b`}, "axb", false},
		{ShowLike{Pattern: "%a%b%"}, "xxaxxbxx", true},
		{ShowLike{Pattern: "%a%b%"}, "xxbxxaxx", false},
		{ShowLike{Pattern: ""}, "", true},
	} {
		if got := c.like.Match(c.name); got != c.want {
			t.Errorf("%+v matches %q: %v, want %v", c.like, c.name, got, c.want)
		}
	}
	if !(*ShowLike)(nil).Match("anything") {
		t.Error("no LIKE must pass every name")
	}
}
