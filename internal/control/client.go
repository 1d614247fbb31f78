package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir/internal/webauth"
)

// Endpoint reads the address and the token of the job whose checkpoint
// directory is dir.
func Endpoint(dir string) (addr, token string, err error) {
	b, err := os.ReadFile(filepath.Join(dir, AddrFile))
	if err != nil {
		return "", "", fmt.Errorf("no running job found for %s: %w", dir, err)
	}
	if token, err = webauth.ReadToken(filepath.Join(dir, TokenFile)); err != nil {
		return "", "", fmt.Errorf("the job's token: %w", err)
	}
	return strings.TrimSpace(string(b)), token, nil
}

// RequestSavepoint asks the job whose endpoint listens at addr for a
// savepoint into path (a name under its savepoint directory, or an
// absolute path inside it) and returns where it was written.
func RequestSavepoint(ctx context.Context, addr, token, path string, stop bool) (string, error) {
	body, _ := json.Marshal(SavepointRequest{Path: path, Stop: stop})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/savepoint", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("weir: control endpoint %s: %w", addr, err)
	}
	defer resp.Body.Close()
	var out SavepointResponse
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("weir: control endpoint %s: %s: bad answer %q", addr, resp.Status, b)
	}
	if out.Error != "" {
		return "", errors.New(out.Error)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("weir: control endpoint %s: %s", addr, resp.Status)
	}
	return out.Path, nil
}
