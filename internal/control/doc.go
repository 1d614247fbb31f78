// Package control is a running job's control endpoint and its client (the
// `weir savepoint` command):
//
//	POST /v1/savepoint {"path": NAME, "stop": bool}  take a savepoint
//	GET  /v1/status                                  describe the job
//
// The endpoint listens on loopback unless given a host, and writes its
// address (AddrFile) and the job's token (TokenFile, mode 0600) to the
// checkpoint directory, where the client finds them. Every request needs
// the token and the right Host, a state change needs no foreign Origin and
// a JSON body (package webauth). A savepoint's path is confined to the
// job's savepoint directory (Resolve).
//
// The package knows nothing of the root package: the job hands it
// functions (Config.Savepoint, Config.Status).
package control
