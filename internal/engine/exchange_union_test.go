package engine

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The planning of group mode behind unions (exchange.go,
// exchangeBranches): a KeyBy behind a union of a union, or behind
// one-input operators after a union, is cut on the branches of the
// unions. These tests plan jobs (rewriteExchanges, as runGroup does) and
// look at the graph; connector/kafka's TestGroupUnion* run such jobs.

// unionTestJob is a job with three slice sources a, b and c.
func unionTestJob() (*Job, [3]*Stream[int]) {
	j := NewJob("unions", AppID("u"))
	var s [3]*Stream[int]
	for i, name := range []string{"a", "b", "c"} {
		s[i] = FromSource(j, name, SliceSource([]int{1, 2, 3}), NoWatermarks[int](), UID(name))
	}
	return j, s
}

// keyedCount keys s by itself into an event-time window count (uid "w").
func keyedCount(s *Stream[int]) {
	Collect(Aggregate(Window(KeyBy(s, func(v int) int { return v }), Tumbling(time.Second)), Count[int](), Name("w"), UID("w")))
}

// writerChains describes each writer of the repartition topic of uid w
// by the names and uids of the nodes from the writer up to its source:
// "w (repartition out 0)<-map[map-w-0]<-a".
func writerChains(t *testing.T, j *Job) []string {
	t.Helper()
	var out []string
	for _, n := range j.nodes {
		if !strings.Contains(n.name, "(repartition out") {
			continue
		}
		var parts []string
		for m := n; ; m = m.inputs[0].from {
			if len(m.inputs) != 1 && m.run == nil {
				t.Fatalf("node %q on a writer's chain has %d inputs", m.name, len(m.inputs))
			}
			s := m.name
			if m != n && m.run == nil {
				s += "[" + m.uid + "]"
			}
			parts = append(parts, s)
			if m.run != nil {
				break
			}
		}
		out = append(out, strings.Join(parts, "<-"))
	}
	return out
}

// checkPlanned checks what every plan must be: topological node order,
// ids in order, no union left feeding a keyed operator, and edges that
// agree on both ends.
func checkPlanned(t *testing.T, j *Job) {
	t.Helper()
	in := map[*node]bool{}
	for i, n := range j.nodes {
		if n.id != i {
			t.Fatalf("node %q: id %d at %d", n.name, n.id, i)
		}
		for _, e := range n.inputs {
			if !in[e.from] {
				t.Fatalf("node %q comes before its input %q, or its input is not in the graph", n.name, e.from.name)
			}
			if !slices.Contains(e.from.outputs, e) {
				t.Fatalf("edge %q -> %q missing from its sender's outputs", e.from.name, n.name)
			}
		}
		in[n] = true
	}
	for _, n := range j.nodes {
		for _, e := range n.outputs {
			if !in[e.to] {
				t.Fatalf("node %q feeds %q, which is not in the graph", n.name, e.to.name)
			}
		}
	}
}

func names(j *Job) []string {
	var out []string
	for _, n := range j.nodes {
		out = append(out, n.name)
	}
	return out
}

func TestExchangeUnionOfUnion(t *testing.T) {
	j, s := unionTestJob()
	keyedCount(Union(Union(s[0], s[1]), s[2]))
	xs, err := j.rewriteExchanges()
	if err != nil {
		t.Fatal(err)
	}
	checkPlanned(t, j)
	if len(xs) != 1 || len(xs[0].Upstreams) != 3 || xs[0].UID != "w" {
		t.Fatalf("exchanges %+v, want one of uid w with three upstreams", xs)
	}
	for i, up := range xs[0].Upstreams {
		if up != s[i].node.impl {
			t.Errorf("upstream %d is %v, want source %q", i, up, s[i].node.name)
		}
	}
	want := []string{"w (repartition out 0)<-a", "w (repartition out 1)<-b", "w (repartition out 2)<-c"}
	if got := writerChains(t, j); !slices.Equal(got, want) {
		t.Errorf("writers %q, want %q", got, want)
	}
	for _, n := range j.nodes {
		if n.union {
			t.Errorf("union %q left in the graph: %q", n.name, names(j))
		}
	}
}

func TestExchangeOperatorsAfterUnion(t *testing.T) {
	j, s := unionTestJob()
	m := Map(Union(s[0], s[1]), func(v int) int { return v * 2 }, Name("double"), UID("dbl"))
	f := Filter(m, func(v int) bool { return v > 0 }, Name("positive"), UID("pos"))
	keyedCount(f)
	xs, err := j.rewriteExchanges()
	if err != nil {
		t.Fatal(err)
	}
	checkPlanned(t, j)
	if len(xs) != 1 || len(xs[0].Upstreams) != 2 {
		t.Fatalf("exchanges %+v, want one with two upstreams", xs)
	}
	want := []string{
		"w (repartition out 0)<-positive[pos-w-0]<-double[dbl-w-0]<-a",
		"w (repartition out 1)<-positive[pos-w-1]<-double[dbl-w-1]<-b",
	}
	if got := writerChains(t, j); !slices.Equal(got, want) {
		t.Errorf("writers %q, want %q", got, want)
	}
	// The originals and the union are gone (nothing else read them); c,
	// unused, stays.
	for _, n := range j.nodes {
		if n.union || n == m.node || n == f.node {
			t.Errorf("%q left in the graph: %q", n.name, names(j))
		}
	}
	// A copy builds the operator's own function.
	if m.node.build == nil || j.nodes[slices.IndexFunc(j.nodes, func(n *node) bool { return n.uid == "dbl-w-1" })].build == nil {
		t.Fatal("a copy without a build")
	}
}

// TestExchangeMixedUnions: a Map between two unions, and a union read by
// a sink too (which keeps it and the operators after it: the KeyBy gets
// copies of its own).
func TestExchangeMixedUnions(t *testing.T) {
	j, s := unionTestJob()
	inner := Union(s[0], s[1])
	Collect(inner, Name("also"))
	m := Map(inner, func(v int) int { return v + 1 }, Name("inc"), UID("inc"))
	keyedCount(Union(m, s[2], s[0]))
	xs, err := j.rewriteExchanges()
	if err != nil {
		t.Fatal(err)
	}
	checkPlanned(t, j)
	if len(xs) != 1 || len(xs[0].Upstreams) != 4 {
		t.Fatalf("exchanges %+v, want one with four upstreams", xs)
	}
	want := []string{
		"w (repartition out 0)<-inc[inc-w-0]<-a",
		"w (repartition out 1)<-inc[inc-w-1]<-b",
		"w (repartition out 2)<-c",
		"w (repartition out 3)<-a",
	}
	if got := writerChains(t, j); !slices.Equal(got, want) {
		t.Errorf("writers %q, want %q", got, want)
	}
	// The inner union stays for the sink; the Map and the outer union go.
	unions := 0
	for _, n := range j.nodes {
		if n.union {
			unions++
			if len(n.outputs) != 1 || n.outputs[0].to.name != "also" {
				t.Errorf("the union left feeds %d nodes, want the sink only", len(n.outputs))
			}
		}
		if n == m.node {
			t.Errorf("the Map left in the graph: %q", names(j))
		}
	}
	if unions != 1 {
		t.Errorf("%d unions left, want the one the sink reads: %q", unions, names(j))
	}
}

// TestExchangeTwoKeyBysAfterUnion: two KeyBys behind one Map after a
// union each get their copies (their uids apart); the original goes after
// the second.
func TestExchangeTwoKeyBysAfterUnion(t *testing.T) {
	j, s := unionTestJob()
	m := Map(Union(s[0], s[1]), func(v int) int { return v }, Name("id"), UID("id"))
	ks := KeyBy(m, func(v int) int { return v })
	Collect(Aggregate(Window(ks, Tumbling(time.Second)), Count[int](), UID("w1")), Name("out1"))
	Collect(Aggregate(Window(ks, Tumbling(time.Minute)), Count[int](), UID("w2")), Name("out2"))
	xs, err := j.rewriteExchanges()
	if err != nil {
		t.Fatal(err)
	}
	checkPlanned(t, j)
	if len(xs) != 2 {
		t.Fatalf("%d exchanges, want 2", len(xs))
	}
	uids := map[string]bool{}
	for _, n := range j.nodes {
		if uids[n.uid] {
			t.Errorf("uid %q twice", n.uid)
		}
		uids[n.uid] = true
		if n == m.node || n.union {
			t.Errorf("%q left in the graph", n.name)
		}
	}
	for _, u := range []string{"id-w1-0", "id-w1-1", "id-w2-0", "id-w2-1"} {
		if !uids[u] {
			t.Errorf("no copy %q: %q", u, names(j))
		}
	}
}

// TestExchangeStillRefused: a redistributed stream (Rebalance) between a
// union and a KeyBy is still refused, with an error naming it.
func TestExchangeStillRefused(t *testing.T) {
	j, s := unionTestJob()
	keyedCount(Map(Rebalance(Union(s[0], s[1]), Name("spread")), func(v int) int { return v }))
	_, err := j.rewriteExchanges()
	if err == nil || !strings.Contains(err.Error(), `"spread", whose input is redistributed`) || !strings.Contains(err.Error(), "group mode") {
		t.Fatalf("rewriteExchanges: %v, want a refusal naming the Rebalance", err)
	}
}
