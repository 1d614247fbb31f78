package weir_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

// The options are typed by where they go: each misuse below must fail to
// compile, at its own line, while the same program with every option in
// its place compiles. The program is built by the go command, in a
// directory of the module whose name starts with "_" (so ./... ignores
// it), with the race detector when this test has it, so that the module's
// packages come from the build cache.
func TestMisplacedOptionsDoNotCompile(t *testing.T) {
	good := []string{
		`job := weir.NewJob("j", weir.Parallelism(2), weir.BatchSize(8), weir.Checkpointing(time.Second, "ck"))`,
		`src := weir.FromSource(job, "in", weir.SliceSource([]int{1}), weir.NoWatermarks[int](), weir.OnBadRecord(weir.Skip), weir.Name("in"), weir.Parallelism(1))`,
		`m := weir.Map(src, func(v int) int { return v }, weir.Name("m"), weir.UID("m"), weir.Parallelism(2))`,
		`ks := weir.KeyBy(m, func(v int) int { return v })`,
		`w := weir.Window(ks, weir.Tumbling(time.Second), weir.AllowedLateness(time.Second), weir.Trigger(weir.CountTrigger(2)), weir.Name("w"))`,
		`_ = weir.Aggregate(w, weir.Count[int](), weir.Retracting(), weir.UID("agg"))`,
		`_ = weir.Join(ks, ks, func(k, l, r int) (int, bool) { return l, true }, weir.StateRetention(time.Hour), weir.Name("join"))`,
		`_ = weir.CoGroup(ks, ks, weir.Tumbling(time.Second), func(k int, w weir.WindowInfo, l, r []int, emit func(int)) error { return nil }, weir.AllowedLateness(time.Second))`,
	}
	bad := []string{
		`_ = weir.NewJob("j", weir.Name("job"))`,
		`_ = weir.NewJob("j", weir.AllowedLateness(time.Second))`,
		`_ = weir.Map(src, func(v int) int { return v }, weir.AllowedLateness(time.Second))`,
		`_ = weir.Map(src, func(v int) int { return v }, weir.OnBadRecord(weir.Skip))`,
		`_ = weir.Map(src, func(v int) int { return v }, weir.StateRetention(time.Hour))`,
		`_ = weir.Map(src, func(v int) int { return v }, weir.BatchSize(8))`,
		`_ = weir.FromSource(job, "x", weir.SliceSource([]int{1}), weir.NoWatermarks[int](), weir.Trigger(weir.CountTrigger(2)))`,
		`_ = weir.Window(ks, weir.Tumbling(time.Second), weir.StateRetention(time.Hour))`,
		`_ = weir.Join(ks, ks, func(k, l, r int) (int, bool) { return l, true }, weir.AllowedLateness(time.Second))`,
		`_ = weir.Aggregate(w, weir.Count[int](), weir.Checkpointing(time.Second, "ck"))`,
	}
	program := func(lines []string) string {
		var b strings.Builder
		b.WriteString("package misuse\n\nimport (\n\t\"time\"\n\n\t\"github.com/weirstream/weir\"\n)\n\nfunc build() {\n")
		for _, l := range append(good, lines...) {
			b.WriteString("\t" + l + "\n")
		}
		b.WriteString("\t_, _, _, _, _ = job, src, m, ks, w\n}\n")
		return b.String()
	}
	build := func(src string) string {
		dir, err := os.MkdirTemp(".", "_misuse")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, "misuse.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"build", "-o", os.DevNull, "-gcflags=-e"}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "./"+filepath.Base(dir))...).CombinedOutput()
		if err == nil {
			return ""
		}
		if len(out) == 0 {
			t.Fatalf("go build: %v", err)
		}
		return string(out)
	}

	if out := build(program(nil)); out != "" {
		t.Fatalf("the options in their places do not compile:\n%s", out)
	}
	out := build(program(bad))
	errLines := map[int]string{}
	for _, m := range regexp.MustCompile(`misuse\.go:(\d+):\d+: (.*)`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		errLines[n] = m[2]
	}
	first := 10 + len(good) // the line of bad[0]: 9 lines of header, then good
	for i, l := range bad {
		msg, ok := errLines[first+i]
		if !ok {
			t.Errorf("compiles, but must not: %s", l)
			continue
		}
		if !strings.Contains(msg, "does not implement") {
			t.Errorf("%s: error %q, want one about the option's type", l, msg)
		}
	}
	if len(errLines) != len(bad) {
		t.Errorf("%d errors for %d misuses:\n%s", len(errLines), len(bad), out)
	}
	// The options print themselves as written.
	for _, o := range []fmt.Stringer{weir.Parallelism(3), weir.Name("x"), weir.AllowedLateness(0), weir.OnBadRecord(weir.Skip), weir.BatchSize(8)} {
		if s := o.String(); !strings.Contains(s, "(") {
			t.Errorf("option prints as %q", s)
		}
	}
}
