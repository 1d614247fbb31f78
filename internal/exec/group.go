package exec

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// TaskError is the failure of one task: which operator, which subtask, and
// why. Panics are turned into TaskErrors with the stack in Stack.
type TaskError struct {
	Operator string
	Subtask  int
	Cause    error
	Stack    []byte // set when the task panicked
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("weir: operator %q (subtask %d) failed: %v", e.Operator, e.Subtask, e.Cause)
}

func (e *TaskError) Unwrap() error { return e.Cause }

// Group runs tasks in goroutines. The first task that fails cancels the
// group's context with its error as the cause; Wait returns that error.
type Group struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
}

// NewGroup returns a group whose context is derived from parent.
func NewGroup(parent context.Context) *Group {
	ctx, cancel := context.WithCancelCause(parent)
	return &Group{ctx: ctx, cancel: cancel}
}

// Context is cancelled when any task fails or the parent is cancelled.
func (g *Group) Context() context.Context { return g.ctx }

// Go runs fn as the task named operator/subtask. fn returning ErrCancelled
// after the group was cancelled is not a failure of its own.
func (g *Group) Go(operator string, subtask int, fn func(ctx context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				cause, ok := r.(error)
				if !ok {
					cause = fmt.Errorf("panic: %v", r)
				} else {
					cause = fmt.Errorf("panic: %w", cause)
				}
				g.cancel(&TaskError{Operator: operator, Subtask: subtask, Cause: cause, Stack: debug.Stack()})
			}
		}()
		if err := fn(g.ctx); err != nil {
			if errors.Is(err, ErrCancelled) && g.ctx.Err() != nil {
				return
			}
			var te *TaskError
			if !errors.As(err, &te) {
				err = &TaskError{Operator: operator, Subtask: subtask, Cause: err}
			}
			g.cancel(err)
		}
	}()
}

// Wait waits for every task and returns the first failure, or the parent's
// cancellation cause, or nil.
func (g *Group) Wait() error {
	g.wg.Wait()
	err := context.Cause(g.ctx)
	g.cancel(nil)
	return err
}
