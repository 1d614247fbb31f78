package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside is returned by Resolve for a path it does not accept.
var ErrOutside = errors.New("outside the savepoint directory")

// Resolve confines a savepoint path from a request to dir, the job's
// savepoint directory (which must exist). name is either relative (taken
// under dir) or absolute; either way, after symbolic links are evaluated
// it must lie strictly inside dir, and it may not contain "..". It returns
// the absolute, resolved path.
//
// The check and the later write are not atomic: whoever can write to dir
// can still swap a directory for a symbolic link in between. dir is the
// operator's; the check is against requests, not against its owner.
func Resolve(dir, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("savepoint path: empty")
	}
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("savepoint path %q: %w", name, ErrOutside)
	}
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if part == ".." {
			return "", fmt.Errorf("savepoint path %q: must not contain \"..\": %w", name, ErrOutside)
		}
	}
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return "", fmt.Errorf("savepoint directory %s: %w", dir, err)
	}
	target := filepath.Clean(name)
	if !filepath.IsAbs(target) {
		target = filepath.Join(root, target)
	}
	resolved, err := evalExisting(target)
	if err != nil {
		return "", fmt.Errorf("savepoint path %q: %w", name, err)
	}
	rel, err := filepath.Rel(root, resolved)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("savepoint path %q (%s): %w %s", name, resolved, ErrOutside, root)
	}
	return resolved, nil
}

// evalExisting evaluates the symbolic links of the longest prefix of p that
// exists and appends the rest. A prefix that is itself a link to nowhere is
// refused: writing through it would land wherever it points.
func evalExisting(p string) (string, error) {
	cur, rest := p, ""
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			return "", fmt.Errorf("%s is a symbolic link to nowhere: %w", cur, ErrOutside)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
