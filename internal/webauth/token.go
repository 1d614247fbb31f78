package webauth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// tokenBytes is the token's entropy: 128 bits, as docs/design.md §11
// (security model) asks.
const tokenBytes = 16

// NewToken returns a random token: 128 bits from crypto/rand, in hex.
func NewToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webauth: token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// WriteToken writes token to path with mode 0600, replacing any file there.
// It writes a temporary file (created 0600 by os.CreateTemp) and renames it
// over path: truncating an existing file would keep that file's mode, which
// may be wider.
func WriteToken(path, token string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("webauth: token file: %w", err)
	}
	tmp := f.Name()
	_, err = f.WriteString(token + "\n")
	if err == nil {
		err = f.Chmod(0o600) // CreateTemp's 0600 is before the umask; be explicit
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("webauth: token file %s: %w", path, err)
	}
	return nil
}

// ReadToken reads a token written by WriteToken.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("webauth: token file %s: %w", path, errEmptyToken)
	}
	return tok, nil
}

var errEmptyToken = errors.New("empty")
