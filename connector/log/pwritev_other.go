//go:build !linux

package wlog

import "os"

// writeAt2 writes a and then b at off of f (two writes where pwritev(2) is
// not used: a crash between them leaves a torn batch, which recovery
// truncates as any other).
func writeAt2(f *os.File, a, b []byte, off int64) error {
	if _, err := f.WriteAt(a, off); err != nil {
		return err
	}
	_, err := f.WriteAt(b, off+int64(len(a)))
	return err
}
