package broker

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/weirstream/weir/internal/testing/certtest"
)

// selfSigned returns a server TLS config for 127.0.0.1 and a client
// config that trusts it.
func selfSigned(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	c, err := certtest.New()
	if err != nil {
		t.Fatal(err)
	}
	return c.Server(), c.Client()
}

// TestOffLoopbackNeedsCredentials: the broker refuses to listen off
// loopback open, or with TLS but no users.
func TestOffLoopbackNeedsCredentials(t *testing.T) {
	srv, _ := selfSigned(t)
	for _, cfg := range []Config{
		{DataDir: t.TempDir(), Listen: "0.0.0.0:0"},
		{DataDir: t.TempDir(), Listen: "0.0.0.0:0", TLS: srv},
		{DataDir: t.TempDir(), Listen: "0.0.0.0:0", Users: map[string]string{"u": "p"}},
	} {
		b, err := Start(context.Background(), cfg)
		if err == nil {
			b.Close()
			t.Fatalf("started on %s with TLS %v and %d users", cfg.Listen, cfg.TLS != nil, len(cfg.Users))
		}
		if !strings.Contains(err.Error(), "TLS and SASL") {
			t.Fatalf("error %q does not say what is missing", err)
		}
	}
}

// TestSASLPlainOverTLS: with users, a client authenticates with
// SASL/PLAIN over TLS and works; a wrong password or no SASL gets
// nothing.
func TestSASLPlainOverTLS(t *testing.T) {
	srv, cli := selfSigned(t)
	b, err := Start(context.Background(), Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", TLS: srv,
		Users: map[string]string{"alice": "s3cret"}, InitialRebalanceDelay: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	good := newClient(t, b, kgo.DialTLSConfig(cli), kgo.SASL(plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism()))
	createTopic(t, good, "secret", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := good.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("authenticated produce: %v", err)
	}
	for name, opts := range map[string][]kgo.Opt{
		"wrong password": {kgo.DialTLSConfig(cli), kgo.SASL(plain.Auth{User: "alice", Pass: "guess"}.AsMechanism())},
		"unknown user":   {kgo.DialTLSConfig(cli), kgo.SASL(plain.Auth{User: "mallory", Pass: "s3cret"}.AsMechanism())},
		"no SASL":        {kgo.DialTLSConfig(cli)},
	} {
		cl := newClient(t, b, append(opts, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("x")}).FirstErr()
		cancel()
		if err == nil {
			t.Fatalf("%s: produce succeeded", name)
		}
	}
	recs := consumeAll(t, b, "secret", 1, kgo.DialTLSConfig(cli), kgo.SASL(plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism()))
	if len(recs) != 1 {
		t.Fatalf("read %d records, want only the authenticated one", len(recs))
	}
}
