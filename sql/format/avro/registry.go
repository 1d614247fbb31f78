package avro

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirstream/weir/internal/keystore"
	"github.com/weirstream/weir/sql/format"
)

// registryTimeout bounds one call to the schema registry (a decoder and an
// encoder have no context of their own: the source's or sink's loop calls
// them).
const registryTimeout = 30 * time.Second

// RegistryOptions are the schema registry settings of 'avro-confluent' and
// 'debezium-avro-confluent', as Flink's options name them.
type RegistryOptions struct {
	URL          string
	Subject      string
	Schema       string
	AutoRegister bool
	// BasicAuth is "user:password" ('basic-auth.user-info', or the URL's
	// user info with 'basic-auth.credentials-source' = 'URL').
	BasicAuth   string
	BearerToken string
	TLS         *tls.Config
}

// readRegistryOptions reads the registry's options under o's prefix;
// Flink's older keys ('schema-registry.url', ...) are read as fallbacks.
func readRegistryOptions(o *format.Scoped) (RegistryOptions, error) {
	get := func(key, fallback string) string {
		if v, ok := o.O.Lookup(o.Key(key)); ok {
			return v
		}
		v, _ := o.O.Lookup(o.Key(fallback))
		return v
	}
	props := o.O.Prefixed(o.Key("properties."))
	ro := RegistryOptions{
		URL:          get("url", "schema-registry.url"),
		Subject:      get("subject", "schema-registry.subject"),
		Schema:       get("schema", "schema-registry.schema"),
		AutoRegister: o.O.Bool(o.Key("auto.register.schemas"), true),
	}
	if ro.URL == "" {
		ro.URL = props["schema.registry.url"]
	}
	if ro.URL == "" {
		return ro, fmt.Errorf("missing required option '%s'", o.Key("url"))
	}
	src := strings.ToUpper(o.O.String(o.Key("basic-auth.credentials-source"), props["basic.auth.credentials.source"]))
	info := o.O.String(o.Key("basic-auth.user-info"), props["basic.auth.user.info"])
	switch src {
	case "", "USER_INFO":
		ro.BasicAuth = info
	case "URL":
		u, err := url.Parse(strings.Split(ro.URL, ",")[0])
		if err != nil {
			return ro, fmt.Errorf("'%s': %v", o.Key("url"), err)
		}
		if u.User == nil {
			return ro, fmt.Errorf("'%s' = 'URL' but the URL has no user info", o.Key("basic-auth.credentials-source"))
		}
		ro.BasicAuth = u.User.String()
		if p, ok := u.User.Password(); ok {
			ro.BasicAuth = u.User.Username() + ":" + p
		}
	default:
		return ro, fmt.Errorf("'%s' = '%s' is not supported (USER_INFO or URL)", o.Key("basic-auth.credentials-source"), src)
	}
	if ro.BasicAuth != "" && !strings.Contains(ro.BasicAuth, ":") {
		return ro, fmt.Errorf("'%s' must be 'user:password'", o.Key("basic-auth.user-info"))
	}
	bsrc := strings.ToUpper(o.O.String(o.Key("bearer-auth.credentials-source"), props["bearer.auth.credentials.source"]))
	if bsrc != "" && bsrc != "STATIC_TOKEN" {
		return ro, fmt.Errorf("'%s' = '%s' is not supported (STATIC_TOKEN)", o.Key("bearer-auth.credentials-source"), bsrc)
	}
	ro.BearerToken = o.O.String(o.Key("bearer-auth.token"), props["bearer.auth.token"])
	if ro.BasicAuth != "" && ro.BearerToken != "" {
		return ro, errors.New("basic and bearer authentication are both set")
	}
	trust := o.O.String(o.Key("ssl.truststore.location"), props["schema.registry.ssl.truststore.location"])
	key := o.O.String(o.Key("ssl.keystore.location"), props["schema.registry.ssl.keystore.location"])
	// Java's stores, as Confluent's client reads them: JKS or PKCS#12
	// files with a password, or PEM (the type from the file's content)
	trustPass := o.O.String(o.Key("ssl.truststore.password"), props["schema.registry.ssl.truststore.password"])
	keyPass := o.O.String(o.Key("ssl.keystore.password"), props["schema.registry.ssl.keystore.password"])
	if trust != "" || key != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if trust != "" {
			certs, err := keystore.Trust(trust, "", trustPass)
			if err != nil {
				return ro, fmt.Errorf("'%s': %v", o.Key("ssl.truststore.location"), err)
			}
			cfg.RootCAs = keystore.Pool(certs)
		}
		if key != "" {
			cert, err := keystore.KeyPair(key, "", keyPass, props["schema.registry.ssl.key.password"])
			if err != nil {
				return ro, fmt.Errorf("'%s': %v", o.Key("ssl.keystore.location"), err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		ro.TLS = cfg
	}
	return ro, nil
}

// defaultSubject is Flink's: '<topic>-value' or '<topic>-key' for the Kafka
// connectors' value and key formats.
func defaultSubject(o *format.Scoped) string {
	switch o.O.Connector() {
	case "kafka", "upsert-kafka":
	default:
		return ""
	}
	topic, _ := o.O.Lookup("topic")
	if topic == "" || strings.ContainsAny(topic, ";") {
		return ""
	}
	if strings.HasPrefix(o.Prefix, "key.") {
		return topic + "-key"
	}
	return topic + "-value"
}

// Registry is a schema registry client with the caches the formats need:
// writer schemas by id (fetched once each) and the ids of the schemas an
// encoder registers (registered once each). It is safe for concurrent use.
type Registry struct {
	cl *sr.Client

	ids sync.Map // int -> *fetch
}

type fetch struct {
	done   chan struct{}
	schema avro.Schema
	err    error
}

// NewRegistry returns a client of the registry ro names.
func NewRegistry(ro RegistryOptions) (*Registry, error) {
	opts := []sr.ClientOpt{sr.URLs(strings.Split(ro.URL, ",")...), sr.UserAgent("weir")}
	if ro.BasicAuth != "" {
		user, pass, _ := strings.Cut(ro.BasicAuth, ":")
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	if ro.BearerToken != "" {
		opts = append(opts, sr.BearerToken(ro.BearerToken))
	}
	if ro.TLS != nil {
		opts = append(opts, sr.HTTPClient(&http.Client{Timeout: registryTimeout, Transport: &http.Transport{TLSClientConfig: ro.TLS}}))
	} else {
		opts = append(opts, sr.HTTPClient(&http.Client{Timeout: registryTimeout}))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &Registry{cl: cl}, nil
}

// ErrUnknownSchema is the cause of the error for a record whose schema id
// the registry does not know.
var ErrUnknownSchema = errors.New("schema id not found in the registry")

// SchemaByID returns the Avro schema of id, fetching it on first use; the
// schema is parsed once and kept. A failed fetch is not kept (the next
// record asks again).
func (g *Registry) SchemaByID(ctx context.Context, id int) (avro.Schema, error) {
	if f, ok := g.ids.Load(id); ok {
		f := f.(*fetch)
		<-f.done
		if f.err == nil {
			return f.schema, nil
		}
	}
	f := &fetch{done: make(chan struct{})}
	if prev, loaded := g.ids.LoadOrStore(id, f); loaded {
		p := prev.(*fetch)
		<-p.done
		if p.err == nil {
			return p.schema, nil
		}
		// The earlier fetch failed: try again ourselves.
		g.ids.CompareAndDelete(id, p)
		if prev, loaded = g.ids.LoadOrStore(id, f); loaded {
			p = prev.(*fetch)
			<-p.done
			return p.schema, p.err
		}
	}
	f.schema, f.err = g.fetch(ctx, id)
	if f.err != nil {
		g.ids.CompareAndDelete(id, f)
	}
	close(f.done)
	return f.schema, f.err
}

func (g *Registry) fetch(ctx context.Context, id int) (avro.Schema, error) {
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	s, err := g.cl.SchemaByID(ctx, id)
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%w (%s)", ErrUnknownSchema, re.Message)
		}
		return nil, fmt.Errorf("%w: %w", errRegistry, httpErr(err))
	}
	if s.Type != sr.TypeAvro && s.Type != 0 {
		return nil, fmt.Errorf("a %s schema, not Avro", s.Type)
	}
	if len(s.References) > 0 {
		return nil, errors.New("the schema has references, which are not supported")
	}
	parsed, err := Parse(s.Schema)
	if err != nil {
		return nil, err
	}
	return parsed, nil
}

// Register registers s under subject (or, without auto-registration,
// looks it up) and returns its id.
func (g *Registry) Register(ctx context.Context, subject string, s avro.Schema, auto bool) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, registryTimeout)
	defer cancel()
	schema := sr.Schema{Schema: SchemaJSON(s), Type: sr.TypeAvro}
	if auto {
		id, err := g.cl.RegisterSchema(ctx, subject, schema, -1, -1)
		if err != nil {
			return 0, fmt.Errorf("registering the schema under subject '%s': %w", subject, httpErr(err))
		}
		return id, nil
	}
	ss, err := g.cl.LookupSchema(ctx, subject, schema)
	if err != nil {
		return 0, fmt.Errorf("looking the schema up under subject '%s' (auto.register.schemas is false): %w", subject, httpErr(err))
	}
	return ss.ID, nil
}

// httpErr adds the HTTP status and Confluent's error code to a registry's
// refusal, whose message alone ("Unauthorized") says little.
func httpErr(err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return fmt.Errorf("HTTP %d (error code %d): %w", re.StatusCode, re.ErrorCode, err)
	}
	return err
}
