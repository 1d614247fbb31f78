package broker

import (
	"bytes"
	"crypto/subtle"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslState is a connection's SASL exchange.
type saslState struct {
	mechanism string
	failed    bool
}

func (c *conn) saslHandshake(r *kmsg.SASLHandshakeRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = []string{"PLAIN"}
	if r.Mechanism != "PLAIN" {
		resp.ErrorCode = codeUnsupportedSASLMechanism
		return resp
	}
	c.sasl.mechanism = r.Mechanism
	return resp
}

// saslAuthenticate checks SASL/PLAIN credentials (RFC 4616:
// authzid NUL authcid NUL passwd) in constant time.
func (c *conn) saslAuthenticate(r *kmsg.SASLAuthenticateRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if c.sasl.mechanism != "PLAIN" || c.authed {
		resp.ErrorCode = codeIllegalSASLState
		c.sasl.failed = true
		return resp
	}
	parts := bytes.SplitN(r.SASLAuthBytes, []byte{0}, 3)
	ok := false
	if len(parts) == 3 {
		want, known := c.b.cfg.Users[string(parts[1])]
		got := parts[2]
		ok = subtle.ConstantTimeCompare([]byte(want), got) == 1 && known
	}
	if !ok {
		msg := "authentication failed: unknown user or wrong password"
		resp.ErrorCode, resp.ErrorMessage = codeSASLAuthenticationFailed, &msg
		c.sasl.failed = true
		return resp
	}
	c.authed = true
	return resp
}
