// Package lint holds tests that check the module's own shape rather than
// its behaviour: TestDependencyRules reads the dependency rules of
// internal/README.md and checks every package's imports against them with
// `go list`, so the written rules cannot go stale (pebble's internal/testing/lint
// does the same for its own rules); TestNoConflictMarkers fails on a merge
// conflict's markers left in any tracked file.
package lint
