//go:build !(linux && (amd64 || arm64))

package wlog

import "os"

// aioContext is unavailable here: a SyncGroup fsyncs in goroutines.
type aioContext struct{}

func newAIOContext(int) (*aioContext, error) { return nil, errAIOUnavailable }

func (a *aioContext) submitFdatasync(*os.File, uint64) error { return errAIOUnavailable }

func (a *aioContext) wait(int, func(uint64, error)) error { return errAIOUnavailable }

func (a *aioContext) close() error { return nil }
