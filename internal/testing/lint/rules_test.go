package lint

import (
	"slices"
	"strings"
	"testing"
)

// The checker catches each kind of break, on a made-up module: the test
// that the real rules hold is only worth something if these fail.
func TestCheckCatchesBreaks(t *testing.T) {
	rules, err := ParseRules("text\n```rules\n" + `
.                  -> internal/state
.                  !>> example.com/heavy
internal/state     ->
internal/state     !> time
internal/state     test-> internal/state/statetest
internal/state/statetest -> internal/state
connector/...      -> .
example.com/cli    <- internal/app/cli
` + "```\n")
	if err != nil {
		t.Fatal(err)
	}
	const mod = "example.com/m"
	pkgs := []Package{
		// a root package that imports a connector and depends on a heavy module
		{Path: ".", Imports: []string{mod + "/internal/state", mod + "/connector/kafka"}, Deps: []string{"example.com/heavy/sub"}},
		// a leaf that reads the clock and imports the root; its tests may use statetest
		{Path: "internal/state", Imports: []string{"time", mod}, TestImports: []string{mod + "/internal/state/statetest", mod + "/internal/state_test"}},
		// statetest's tests may not import what only tests of internal/state may
		{Path: "internal/state/statetest", Imports: []string{mod + "/internal/state"}},
		// a connector below a /... pattern that imports an outside module kept for the CLI
		{Path: "connector/kafka", Imports: []string{mod, "example.com/cli/sub"}},
		// a package with no rule
		{Path: "internal/new"},
	}
	got := rules.Check(mod, pkgs)
	want := []string{
		". depends on example.com/heavy (example.com/heavy/sub): forbidden by internal/README.md",
		". imports connector/kafka: not allowed by internal/README.md",
		"connector/kafka imports example.com/cli/sub: only internal/app/cli may",
		"internal/new: no rule says what it may import (add `internal/new -> ...` to internal/README.md)",
		"internal/state imports .: not allowed by internal/README.md",
		"internal/state imports time: forbidden by internal/README.md",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("breaks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The same packages without the breaks pass.
	clean := []Package{
		{Path: ".", Imports: []string{mod + "/internal/state", "fmt"}, Deps: []string{"fmt"}},
		{Path: "internal/state", Imports: []string{"fmt"}, TestImports: []string{mod + "/internal/state/statetest"}},
		{Path: "internal/state/statetest", Imports: []string{mod + "/internal/state"}},
		{Path: "connector/kafka", Imports: []string{mod}},
	}
	if got := rules.Check(mod, clean); len(got) != 0 {
		t.Fatalf("clean packages break the rules: %v", got)
	}
}

func TestParseRulesErrors(t *testing.T) {
	for _, md := range []string{
		"no block",
		"```rules\n. -> x\n",        // not closed
		"```rules\n. => x\n```\n",   // unknown arrow
		"```rules\nlonely\n```\n",   // no arrow
		"```rules\n. test->\n```\n", // says nothing
	} {
		if _, err := ParseRules(md); err == nil {
			t.Errorf("%q: no error", md)
		}
	}
}
