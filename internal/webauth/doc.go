// Package webauth is the access scheme of weir's HTTP servers (the control
// endpoint, the metrics endpoint and the web dashboard), as docs/design.md
// §11 (security model) sets out:
//
//   - a job token: 128 random bits (crypto/rand), written to a file of mode
//     0600 beside the job's state and never logged; clients send it as
//     "Authorization: Bearer TOKEN" or, from a browser, as the
//     SameSite=Strict cookie CookieName;
//   - a Host check against the bound address, so that a web page whose
//     name was rebound to 127.0.0.1 (DNS rebinding) cannot reach a
//     loopback server;
//   - a same-origin check on every state-changing method: a request with a
//     foreign Origin header is refused, so a page in a local browser cannot
//     submit a form or a "simple" cross-site request to the server;
//   - servers with read, write and idle timeouts, so a slow client cannot
//     hold a connection open.
//
// The package imports nothing from this module.
package webauth
