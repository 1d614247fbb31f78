// Package web is a running job's web server: a dashboard at / and a JSON
// API under /v1/, behind the job's token (package webauth).
//
//	GET  /login?token=TOKEN  set the weir_token cookie and go to /
//	GET  /                   the dashboard (html/template, static files from embed.FS)
//	GET  /v1/job             the job graph with live counters, rates, watermarks
//	GET  /v1/checkpoints     checkpoint history and the latest restore
//	POST /v1/savepoints      take a savepoint {"path": NAME} (optional body)
//	POST /v1/stop            take a savepoint, then stop the job
//	POST /v1/savepoint       the control endpoint's API (package control), an alias
//	GET  /v1/status          likewise
//
// Everything but /login needs the token (Authorization: Bearer, or the
// cookie the login sets) and a Host naming the server; a POST also needs a
// same-origin Origin and, with a body, Content-Type application/json.
// No request names a file the server reads; a savepoint's path is
// confined to the savepoint directory (control.Resolve). Without the
// token the dashboard's pages show nothing of the job.
//
// The package knows nothing of the root package: the job hands it its
// metrics registry and functions (Config.Job, Config.Savepoint).
package web
