// Package s3test starts an S3-compatible server on loopback for tests:
// gofakes3 (github.com/johannesboyne/gofakes3, the server `rclone serve
// s3` is built on) over memory, with the environment (AWS_ENDPOINT_URL_S3,
// credentials, region) set for the test so that weir's s3:// paths and
// the AWS CLI reach it.
package s3test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Server is a running S3 store.
type Server struct {
	// URL is the endpoint, http://127.0.0.1:port.
	URL     string
	backend *s3mem.Backend
	copies  atomic.Int64
}

// Copies is the number of server-side copies (CopyObject) made so far:
// a rename in object storage.
func (s *Server) Copies() int64 { return s.copies.Load() }

// Start starts a store holding the given buckets, sets the test's AWS
// environment to reach it, and stops it when the test ends. Tests that
// call it cannot run in parallel (t.Setenv).
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	backend := s3mem.New()
	for _, b := range buckets {
		if err := backend.CreateBucket(b); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{backend: backend}
	fake := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			s.copies.Add(1)
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "weir-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "weir-test-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL", "WEIR_S3_PATH_STYLE"} {
		t.Setenv(k, "") // restored when the test ends
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	return s
}

// AWSCLI returns the path of the AWS CLI (aws), the independent client
// tests check what weir wrote with. Without it the test fails when
// WEIR_REQUIRE_AWSCLI is set (scripts/test.sh installs it), and returns ""
// otherwise: the test skips that part.
func AWSCLI(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("aws")
	if err == nil {
		return p
	}
	if os.Getenv("WEIR_REQUIRE_AWSCLI") != "" {
		t.Fatal("the AWS CLI (aws) is not installed: bash scripts/awscli.sh install")
	}
	t.Log("the AWS CLI is not installed: not checking with it (bash scripts/awscli.sh install)")
	return ""
}
