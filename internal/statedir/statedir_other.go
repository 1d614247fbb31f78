//go:build !unix

package statedir

// Without flock, dead processes' state directories are not detected: they
// are left for the operator to remove.
func lockForLife(string) error        { return nil }
func lockIsFree(string) (bool, error) { return false, nil }
