package weirtest

import "github.com/weirstream/weir/internal/poll"

// Poll and WaitFor are internal/poll's, here so that the tests outside the
// root package need one helper package.
var (
	Poll    = poll.Poll
	WaitFor = poll.WaitFor
)
