package weir_test

import (
	"context"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

// TestAppIDNeedsKafka: group mode is run by the Kafka connector; a job
// with an app id in a program without it fails with an error saying so,
// and a malformed app id is refused.
func TestAppIDNeedsKafka(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"app", "needs the Kafka connector"},
		{"a b", "without spaces or slashes"},
	} {
		job := weir.NewJob("appid", weir.AppID(tc.id))
		weir.Collect(weir.FromSource(job, "s", weir.SliceSource([]int{1, 2}), weir.NoWatermarks[int]()))
		if err := job.Run(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AppID(%q): Run: %v, want an error saying %q", tc.id, err, tc.want)
		}
	}
}
