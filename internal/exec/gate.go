package exec

import (
	"errors"
	"time"
)

// ErrCancelled is returned by blocking gate operations once the job is
// cancelled.
var ErrCancelled = errors.New("weir: job cancelled")

// Kind tells what a message carries.
type Kind uint8

const (
	// Data carries a batch of records and watermarks.
	Data Kind = iota
	// End says the sending subtask has no more data on this channel: its
	// watermark is +inf from now on.
	End
	// Barrier is a checkpoint barrier: everything before it on the channel
	// belongs to the checkpoint, everything after it to the next.
	Barrier
)

// Message is one unit on an edge. Checkpoint barriers will be another Kind:
// they travel in order with the data, which is what makes barrier alignment
// possible.
type Message struct {
	Kind    Kind
	Channel int32 // index of the sending channel within the receiving gate
	Batch   any   // the typed batch when Kind == Data
}

// Gate is the input side of a task: one bounded queue per upstream channel.
// A full queue blocks its sender (backpressure) without blocking the other
// channels, so a channel can later be held back alone (barrier alignment).
type Gate struct {
	chans  []chan Message
	signal chan struct{} // poked after every send; capacity 1
	done   <-chan struct{}
	next   int
	timer  *time.Timer
	// blocked channels are not read: a channel that delivered a barrier
	// waits until every other channel delivered it too (alignment).
	blocked  []bool
	nblocked int
}

// NewGate returns a gate of n channels holding up to capacity messages each.
// done is closed when the job is cancelled.
func NewGate(n, capacity int, done <-chan struct{}) *Gate {
	g := &Gate{chans: make([]chan Message, n), signal: make(chan struct{}, 1), done: done, blocked: make([]bool, n)}
	for i := range g.chans {
		g.chans[i] = make(chan Message, capacity)
	}
	return g
}

// Channels returns the number of input channels.
func (g *Gate) Channels() int { return len(g.chans) }

// Send puts m on channel ch, blocking while that channel is full. It returns
// how long it was blocked, for the backpressure metric.
func (g *Gate) Send(ch int, m Message) (time.Duration, error) {
	m.Channel = int32(ch)
	var blocked time.Duration
	select {
	case g.chans[ch] <- m:
	default:
		start := time.Now()
		select {
		case g.chans[ch] <- m:
		case <-g.done:
			return time.Since(start), ErrCancelled
		}
		blocked = time.Since(start)
	}
	select {
	case g.signal <- struct{}{}:
	default:
	}
	return blocked, nil
}

// TryNext returns a waiting message without blocking.
func (g *Gate) TryNext() (Message, bool) {
	n := len(g.chans)
	for i := 0; i < n; i++ {
		c := g.next + i
		if c >= n {
			c -= n
		}
		if g.nblocked > 0 && g.blocked[c] {
			continue
		}
		select {
		case m := <-g.chans[c]:
			g.next = c + 1
			if g.next == n {
				g.next = 0
			}
			return m, true
		default:
		}
	}
	return Message{}, false
}

// Block stops reading channel c until UnblockAll.
func (g *Gate) Block(c int) {
	if !g.blocked[c] {
		g.blocked[c] = true
		g.nblocked++
	}
}

// UnblockAll resumes reading every channel.
func (g *Gate) UnblockAll() {
	clear(g.blocked)
	g.nblocked = 0
	// Messages may have queued on blocked channels without waking us.
	select {
	case g.signal <- struct{}{}:
	default:
	}
}

// Next waits for a message. With timeout > 0 it gives up after timeout and
// returns ok == false; with timeout <= 0 it waits until a message arrives or
// the job is cancelled.
func (g *Gate) Next(timeout time.Duration) (m Message, ok bool, err error) {
	for {
		if m, ok := g.TryNext(); ok {
			return m, true, nil
		}
		if timeout <= 0 {
			select {
			case <-g.signal:
				continue
			case <-g.done:
				return Message{}, false, ErrCancelled
			}
		}
		if g.timer == nil {
			g.timer = time.NewTimer(timeout)
		} else {
			g.timer.Reset(timeout)
		}
		select {
		case <-g.signal:
			g.timer.Stop()
			continue
		case <-g.timer.C:
			return Message{}, false, nil
		case <-g.done:
			g.timer.Stop()
			return Message{}, false, ErrCancelled
		}
	}
}
