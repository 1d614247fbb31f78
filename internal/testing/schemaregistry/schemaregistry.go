// Package schemaregistry is a small schema registry speaking the part of
// Confluent's REST API that serializers and deserializers use, on
// 127.0.0.1, for tests: no real registry is installed where weir's tests
// run. Schemas of every type (AVRO, PROTOBUF, JSON) are stored as given;
// ids are global, and the same schema (same type, same text after JSON
// compaction, same references) gets the same id under every subject, as
// Confluent's does.
//
// Endpoints: POST /subjects/{s}/versions (register), POST /subjects/{s}
// (look up), GET /schemas/ids/{id}[/versions|/subjects], GET /subjects,
// GET /subjects/{s}/versions[/{v}|/latest][/schema], GET /schemas/types,
// GET /config. Errors carry Confluent's error codes (40401 subject not
// found, 40402 version not found, 40403 schema not found, 42201 invalid
// schema). Basic or bearer authentication is optional.
package schemaregistry

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/weirstream/weir/internal/testing/certtest"
)

// ContentType is the media type Confluent's registry answers with.
const ContentType = "application/vnd.schemaregistry.v1+json"

// Reference is a schema's reference to another subject's version.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// Schema is a stored schema.
type Schema struct {
	ID         int
	Type       string // "AVRO", "PROTOBUF", "JSON"
	Text       string
	References []Reference
}

type version struct {
	version int
	id      int
	deleted bool
}

// Server is a running registry.
type Server struct {
	// URL is the registry's base URL (http://127.0.0.1:port).
	URL string

	srv  *http.Server
	ln   net.Listener
	user string
	pass string
	tok  string
	tls  bool
	// CertPEM is the server's self-signed certificate (with TLS), for a
	// client's trust store.
	CertPEM []byte

	mu struct {
		sync.Mutex
		schemas  []Schema // by id - 1
		byKey    map[string]int
		subjects map[string][]version
		hits     map[string]int
	}
}

// Option configures a Server.
type Option func(*Server)

// BasicAuth makes the server require HTTP basic authentication.
func BasicAuth(user, pass string) Option {
	return func(s *Server) { s.user, s.pass = user, pass }
}

// BearerToken makes the server require a bearer token.
func BearerToken(tok string) Option {
	return func(s *Server) { s.tok = tok }
}

// TLS makes the server speak HTTPS with a self-signed certificate for
// 127.0.0.1 (Server.CertPEM).
func TLS() Option {
	return func(s *Server) { s.tls = true }
}

// Start starts a registry on a free port of 127.0.0.1.
func Start(opts ...Option) (*Server, error) {
	s := &Server{}
	for _, o := range opts {
		o(s)
	}
	s.mu.byKey = map[string]int{}
	s.mu.subjects = map[string][]version{}
	s.mu.hits = map[string]int{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.URL = "http://" + ln.Addr().String()
	if s.tls {
		cert, err := certtest.New()
		if err != nil {
			ln.Close()
			return nil, err
		}
		s.CertPEM = cert.CertPEM
		ln = tls.NewListener(ln, cert.Server())
		s.URL = "https://" + ln.Addr().String()
	}
	s.ln = ln
	mux := http.NewServeMux()
	s.route(mux, "POST /subjects/{subject}/versions", s.register)
	s.route(mux, "POST /subjects/{subject}", s.lookup)
	s.route(mux, "GET /subjects", s.listSubjects)
	s.route(mux, "GET /subjects/{subject}/versions", s.listVersions)
	s.route(mux, "GET /subjects/{subject}/versions/{version}", s.getVersion)
	s.route(mux, "GET /subjects/{subject}/versions/{version}/schema", s.getVersionSchema)
	s.route(mux, "GET /schemas/ids/{id}", s.getByID)
	s.route(mux, "GET /schemas/ids/{id}/schema", s.getByIDRaw)
	s.route(mux, "GET /schemas/ids/{id}/versions", s.getIDVersions)
	s.route(mux, "GET /schemas/ids/{id}/subjects", s.getIDSubjects)
	s.route(mux, "GET /schemas/types", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, []string{"JSON", "PROTOBUF", "AVRO"})
	})
	s.route(mux, "GET /config", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, map[string]string{"compatibilityLevel": "BACKWARD"})
	})
	s.srv = &http.Server{Handler: mux}
	go s.srv.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

func (s *Server) route(mux *http.ServeMux, pattern string, h http.HandlerFunc) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.mu.hits[pattern]++
		s.mu.Unlock()
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="schema-registry"`)
			reply(w, http.StatusUnauthorized, apiError{401, "Unauthorized"})
			return
		}
		h(w, r)
	})
}

// Hits returns how many requests the route pattern ("GET
// /schemas/ids/{id}", "POST /subjects/{subject}/versions") has served.
func (s *Server) Hits(pattern string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.hits[pattern]
}

func (s *Server) authorized(r *http.Request) bool {
	if s.user != "" {
		u, p, ok := r.BasicAuth()
		return ok && u == s.user && p == s.pass
	}
	if s.tok != "" {
		return r.Header.Get("Authorization") == "Bearer "+s.tok
	}
	return true
}

type apiError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

func notFound(w http.ResponseWriter, code int, msg string) {
	reply(w, http.StatusNotFound, apiError{code, msg})
}

type schemaBody struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
}

type subjectSchema struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
}

// key identifies a schema: its type, its text (compacted, when it is
// JSON) and its references.
func key(typ, text string, refs []Reference) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(text)) != nil {
		b.Reset()
		b.WriteString(text)
	}
	r, _ := json.Marshal(refs)
	return typ + "\x00" + b.String() + "\x00" + string(r)
}

func readBody(w http.ResponseWriter, r *http.Request) (schemaBody, bool) {
	var body schemaBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		reply(w, http.StatusUnprocessableEntity, apiError{42203, "Invalid request body: " + err.Error()})
		return body, false
	}
	if body.SchemaType == "" {
		body.SchemaType = "AVRO"
	}
	switch body.SchemaType {
	case "AVRO", "JSON":
		if !json.Valid([]byte(body.Schema)) {
			reply(w, http.StatusUnprocessableEntity, apiError{42201, "Invalid schema: not JSON"})
			return body, false
		}
	case "PROTOBUF":
		if body.Schema == "" {
			reply(w, http.StatusUnprocessableEntity, apiError{42201, "Invalid schema: empty"})
			return body, false
		}
	default:
		reply(w, http.StatusUnprocessableEntity, apiError{42201, "Invalid schema type " + body.SchemaType})
		return body, false
	}
	return body, true
}

// Register stores a schema under subject as the registry's POST does and
// returns its id.
func (s *Server) Register(subject, schemaType, text string, refs ...Reference) int {
	if schemaType == "" {
		schemaType = "AVRO"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registerLocked(subject, schemaType, text, refs)
}

func (s *Server) registerLocked(subject, typ, text string, refs []Reference) int {
	k := key(typ, text, refs)
	id, ok := s.mu.byKey[k]
	if !ok {
		id = len(s.mu.schemas) + 1
		s.mu.schemas = append(s.mu.schemas, Schema{ID: id, Type: typ, Text: text, References: slices.Clone(refs)})
		s.mu.byKey[k] = id
	}
	vs := s.mu.subjects[subject]
	for _, v := range vs {
		if v.id == id && !v.deleted {
			return id
		}
	}
	n := 1
	if len(vs) > 0 {
		n = vs[len(vs)-1].version + 1
	}
	s.mu.subjects[subject] = append(vs, version{version: n, id: id})
	return id
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	id := s.Register(r.PathValue("subject"), body.SchemaType, body.Schema, body.References...)
	reply(w, http.StatusOK, map[string]int{"id": id})
}

func wireType(t string) string {
	if t == "AVRO" {
		return "" // Confluent leaves AVRO, the default, out
	}
	return t
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	subject := r.PathValue("subject")
	s.mu.Lock()
	defer s.mu.Unlock()
	vs, ok := s.mu.subjects[subject]
	if !ok {
		notFound(w, 40401, "Subject '"+subject+"' not found.")
		return
	}
	id, ok := s.mu.byKey[key(body.SchemaType, body.Schema, body.References)]
	if ok {
		for _, v := range vs {
			if v.id == id && !v.deleted {
				sc := s.mu.schemas[id-1]
				reply(w, http.StatusOK, subjectSchema{subject, v.version, id, sc.Text, wireType(sc.Type), sc.References})
				return
			}
		}
	}
	notFound(w, 40403, "Schema not found")
}

func (s *Server) listSubjects(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out := make([]string, 0, len(s.mu.subjects))
	for k := range s.mu.subjects {
		out = append(out, k)
	}
	s.mu.Unlock()
	sort.Strings(out)
	reply(w, http.StatusOK, out)
}

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	s.mu.Lock()
	defer s.mu.Unlock()
	vs, ok := s.mu.subjects[subject]
	if !ok {
		notFound(w, 40401, "Subject '"+subject+"' not found.")
		return
	}
	out := []int{}
	for _, v := range vs {
		if !v.deleted {
			out = append(out, v.version)
		}
	}
	reply(w, http.StatusOK, out)
}

// versionLocked finds a subject's version ("latest" or a number).
func (s *Server) versionLocked(w http.ResponseWriter, subject, ver string) (subjectSchema, bool) {
	vs, ok := s.mu.subjects[subject]
	if !ok {
		notFound(w, 40401, "Subject '"+subject+"' not found.")
		return subjectSchema{}, false
	}
	var found *version
	if ver == "latest" || ver == "-1" {
		for i := len(vs) - 1; i >= 0; i-- {
			if !vs[i].deleted {
				found = &vs[i]
				break
			}
		}
	} else {
		n, err := strconv.Atoi(ver)
		if err != nil || n < 1 {
			reply(w, http.StatusUnprocessableEntity, apiError{42202, "The specified version '" + ver + "' is not a valid version id."})
			return subjectSchema{}, false
		}
		for i := range vs {
			if vs[i].version == n && !vs[i].deleted {
				found = &vs[i]
			}
		}
	}
	if found == nil {
		notFound(w, 40402, "Version "+ver+" not found.")
		return subjectSchema{}, false
	}
	sc := s.mu.schemas[found.id-1]
	return subjectSchema{subject, found.version, found.id, sc.Text, wireType(sc.Type), sc.References}, true
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ss, ok := s.versionLocked(w, r.PathValue("subject"), r.PathValue("version"))
	s.mu.Unlock()
	if ok {
		reply(w, http.StatusOK, ss)
	}
}

func (s *Server) getVersionSchema(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ss, ok := s.versionLocked(w, r.PathValue("subject"), r.PathValue("version"))
	s.mu.Unlock()
	if ok {
		w.Header().Set("Content-Type", ContentType)
		fmt.Fprint(w, ss.Schema)
	}
}

func (s *Server) schemaByID(w http.ResponseWriter, r *http.Request) (Schema, bool) {
	id, err := strconv.Atoi(r.PathValue("id"))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || id < 1 || id > len(s.mu.schemas) {
		notFound(w, 40403, "Schema "+r.PathValue("id")+" not found")
		return Schema{}, false
	}
	return s.mu.schemas[id-1], true
}

func (s *Server) getByID(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.schemaByID(w, r)
	if ok {
		reply(w, http.StatusOK, schemaBody{Schema: sc.Text, SchemaType: wireType(sc.Type), References: sc.References})
	}
}

func (s *Server) getByIDRaw(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.schemaByID(w, r)
	if ok {
		w.Header().Set("Content-Type", ContentType)
		fmt.Fprint(w, sc.Text)
	}
}

type subjectVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

func (s *Server) usagesLocked(id int) []subjectVersion {
	out := []subjectVersion{}
	for subj, vs := range s.mu.subjects {
		for _, v := range vs {
			if v.id == id && !v.deleted {
				out = append(out, subjectVersion{subj, v.version})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Version < out[j].Version
	})
	return out
}

func (s *Server) getIDVersions(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.schemaByID(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	out := s.usagesLocked(sc.ID)
	s.mu.Unlock()
	reply(w, http.StatusOK, out)
}

func (s *Server) getIDSubjects(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.schemaByID(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	out := []string{}
	for _, u := range s.usagesLocked(sc.ID) {
		if !slices.Contains(out, u.Subject) {
			out = append(out, u.Subject)
		}
	}
	s.mu.Unlock()
	reply(w, http.StatusOK, out)
}

// Schema returns the schema of id.
func (s *Server) Schema(id int) (Schema, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > len(s.mu.schemas) {
		return Schema{}, false
	}
	return s.mu.schemas[id-1], true
}

// Latest returns the latest version's id of subject.
func (s *Server) Latest(subject string) (id, ver int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.mu.subjects[subject]
	for i := len(vs) - 1; i >= 0; i-- {
		if !vs[i].deleted {
			return vs[i].id, vs[i].version, true
		}
	}
	return 0, 0, false
}
