package fraud

import (
	"context"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/cep"
)

// The planted scenarios are found: every small-then-large scenario raises
// an alert (ordinary traffic may add a few more), and declines too.
func TestPatternsFindPlantedFraud(t *testing.T) {
	c := Default()
	c.Events = 50_000
	planted := map[int]int{}
	for i := int64(0); i < c.Events; i++ {
		if _, step, kind := c.scenario(i); kind != 0 && step == 0 {
			planted[kind]++
		}
	}
	job := weir.NewJob("fraud-test", weir.Parallelism(2))
	src := weir.FromSource(job, "txns", weir.GeneratorSource(weir.GeneratorConfig{Count: c.Events, Seed: c.Seed}, c.Gen),
		weir.BoundedOutOfOrderness(2*time.Second, func(t Txn) time.Time { return t.TS }))
	alerts := weir.Collect(cep.DetectAll(weir.KeyBy(src, func(t Txn) string { return t.Card }), Patterns(),
		func(_ string, p int, _ cep.Match[Txn]) int { return p }))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	for _, p := range alerts.Items() {
		got[p+1]++
	}
	if planted[1] == 0 || planted[2] == 0 {
		t.Fatalf("nothing planted: %v", planted)
	}
	if got[1] < planted[1] || got[2] < planted[2] {
		t.Errorf("alerts %v, planted %v", got, planted)
	}
}
