package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/keystore"
	"github.com/weirstream/weir/sql/connector"
)

// security reads the Kafka client's security properties as a Flink table
// gives them (Kafka's own names under 'properties.'), removing them from
// props:
//
//   - 'security.protocol': PLAINTEXT (default), SSL, SASL_PLAINTEXT,
//     SASL_SSL;
//   - 'sasl.mechanism': PLAIN (default), SCRAM-SHA-256, SCRAM-SHA-512,
//     with 'sasl.jaas.config' = '<PlainLoginModule|ScramLoginModule>
//     required username="..." password="...";' (Kafka's login modules);
//   - 'ssl.truststore.location' (a JKS, PKCS12 or PEM store:
//     'ssl.truststore.type', else by its content; a JKS store needs
//     'ssl.truststore.password') or 'ssl.truststore.certificates' (PEM):
//     the CAs the brokers' certificates are checked against (default: the
//     system's);
//   - 'ssl.keystore.location' (a JKS or PKCS12 store with
//     'ssl.keystore.password' and, JKS, 'ssl.key.password' when the key's
//     differs; or a PEM file with the key and its certificate chain) or
//     'ssl.keystore.key' with 'ssl.keystore.certificate.chain': a client
//     certificate;
//   - 'ssl.endpoint.identification.algorithm': 'https' (default) checks
//     the broker's host name, an empty value only its chain.
//
// Encrypted PEM keys are refused with what to use instead.
func security(o *connector.Options, props map[string]string) []kafka.ClientOption {
	take := func(k string) (string, bool) {
		v, ok := props[k]
		delete(props, k)
		return v, ok
	}
	protocol, _ := take("security.protocol")
	protocol = strings.ToUpper(protocol)
	mechanism, hasMech := take("sasl.mechanism")
	jaas, hasJaas := take("sasl.jaas.config")
	ssl := map[string]string{}
	for k, v := range props {
		if strings.HasPrefix(k, "ssl.") {
			ssl[k] = v
			delete(props, k)
		}
	}
	var opts []kafka.ClientOption
	switch protocol {
	case "", "PLAINTEXT", "SSL":
		if hasMech || hasJaas {
			o.Errorf("option 'properties.sasl.*' needs 'properties.security.protocol' = 'SASL_SSL' or 'SASL_PLAINTEXT'")
		}
	case "SASL_PLAINTEXT", "SASL_SSL":
		if m := sasl(o, mechanism, jaas, hasJaas); m != nil {
			opts = append(opts, m)
		}
	default:
		o.Errorf("option 'properties.security.protocol' = '%s': must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", protocol)
	}
	if protocol == "SSL" || protocol == "SASL_SSL" {
		if cfg := tlsConfig(o, ssl); cfg != nil {
			opts = append(opts, kafka.TLS(cfg))
		}
	} else if len(ssl) > 0 {
		o.Errorf("options 'properties.ssl.*' need 'properties.security.protocol' = 'SSL' or 'SASL_SSL'")
	}
	return opts
}

// sasl reads the mechanism and Kafka's JAAS line.
func sasl(o *connector.Options, mechanism, jaas string, hasJaas bool) kafka.ClientOption {
	if mechanism == "" {
		mechanism = "PLAIN"
	}
	if !hasJaas {
		o.Errorf("option 'properties.sasl.jaas.config' is required with SASL (e.g. 'org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p\";')")
		return nil
	}
	module, user, pass, err := parseJAAS(jaas)
	if err != nil {
		o.Errorf("option 'properties.sasl.jaas.config': %v", err)
		return nil
	}
	wantModule := "ScramLoginModule"
	if mechanism == "PLAIN" {
		wantModule = "PlainLoginModule"
	}
	if module != wantModule {
		o.Errorf("option 'properties.sasl.jaas.config': %s needs Kafka's %s, not %s", mechanism, wantModule, module)
		return nil
	}
	switch mechanism {
	case "PLAIN":
		return kafka.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())
	case "SCRAM-SHA-256":
		return kafka.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())
	case "SCRAM-SHA-512":
		return kafka.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())
	}
	o.Errorf("option 'properties.sasl.mechanism' = '%s': must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (others, such as GSSAPI and OAUTHBEARER, are not supported)", mechanism)
	return nil
}

// parseJAAS reads `pkg.Module required username="u" password="p";` and
// returns the module's short name and the credentials. Errors never
// quote the line (it holds a password).
func parseJAAS(s string) (module, user, pass string, err error) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), ";"))
	head, rest, _ := strings.Cut(s, " ")
	if i := strings.LastIndexByte(head, '.'); i >= 0 {
		module = head[i+1:]
	} else {
		module = head
	}
	rest = strings.TrimSpace(rest)
	flag, rest, _ := strings.Cut(rest, " ")
	if flag != "required" {
		return "", "", "", fmt.Errorf("the login module's flag must be 'required'")
	}
	got := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			return "", "", "", fmt.Errorf("expected key=\"value\" pairs after 'required'")
		}
		k = strings.TrimSpace(k)
		v = strings.TrimLeft(v, " ")
		if !strings.HasPrefix(v, `"`) {
			return "", "", "", fmt.Errorf("the value of '%s' must be in double quotes", k)
		}
		var b strings.Builder
		i := 1
		for ; i < len(v) && v[i] != '"'; i++ {
			if v[i] == '\\' && i+1 < len(v) {
				i++
			}
			b.WriteByte(v[i])
		}
		if i >= len(v) {
			return "", "", "", fmt.Errorf("the value of '%s' has no closing quote", k)
		}
		got[k] = b.String()
		rest = v[i+1:]
	}
	user, hasUser := got["username"]
	pass, hasPass := got["password"]
	if !hasUser || !hasPass {
		return "", "", "", fmt.Errorf("username and password are required")
	}
	return module, user, pass, nil
}

// tlsConfig reads the 'ssl.*' properties: stores in PEM, JKS or PKCS12
// (keystore.go).
func tlsConfig(o *connector.Options, ssl map[string]string) *tls.Config {
	take := func(k string) (string, bool) {
		v, ok := ssl[k]
		delete(ssl, k)
		return v, ok
	}
	bad := false
	fail := func(format string, args ...any) {
		o.Errorf(format, args...)
		bad = true
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	trustType, _ := take("ssl.truststore.type")
	trustPass, _ := take("ssl.truststore.password")
	keyType, _ := take("ssl.keystore.type")
	keyStorePass, _ := take("ssl.keystore.password")
	keyPass, hasKeyPass := take("ssl.key.password")
	for k, t := range map[string]string{"ssl.truststore.type": trustType, "ssl.keystore.type": keyType} {
		switch strings.ToUpper(t) {
		case "", "PEM", "JKS", "PKCS12":
		default:
			fail("option 'properties.%s' = '%s': must be JKS, PKCS12 or PEM", k, t)
		}
	}
	if _, ok := ssl["ssl.keystore.location"]; hasKeyPass && !ok {
		fail("option 'properties.ssl.key.password' needs 'properties.ssl.keystore.location' (a JKS store's key password)")
	}
	var trust []byte
	if path, ok := take("ssl.truststore.location"); ok {
		certs, err := keystore.Trust(path, trustType, trustPass)
		if err != nil {
			fail("option 'properties.ssl.truststore.location': %v", err)
		}
		for _, c := range certs {
			trust = append(trust, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		}
	}
	if v, ok := take("ssl.truststore.certificates"); ok {
		trust = append(trust, v...)
	}
	if len(trust) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(trust) {
			fail("option 'properties.ssl.truststore.*': no certificate found in the PEM")
		}
		cfg.RootCAs = pool
	}
	var keyPEM, chainPEM []byte
	if path, ok := take("ssl.keystore.location"); ok {
		cert, err := keystore.KeyPair(path, keyType, keyStorePass, keyPass)
		if err != nil {
			fail("option 'properties.ssl.keystore.location': %v", err)
		} else {
			cfg.Certificates = []tls.Certificate{cert}
		}
	}
	if v, ok := take("ssl.keystore.key"); ok {
		keyPEM = []byte(v)
	}
	if v, ok := take("ssl.keystore.certificate.chain"); ok {
		chainPEM = []byte(v)
	}
	if len(keyPEM) > 0 || len(chainPEM) > 0 {
		cert, err := tls.X509KeyPair(chainPEM, keyPEM)
		if err != nil {
			fail("option 'properties.ssl.keystore.*': %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if alg, ok := take("ssl.endpoint.identification.algorithm"); ok {
		switch strings.ToLower(alg) {
		case "https":
		case "":
			// the chain is checked, not the host name (Kafka's '')
			cfg.InsecureSkipVerify = true
			roots := cfg.RootCAs
			cfg.VerifyConnection = func(cs tls.ConnectionState) error {
				opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
				for _, c := range cs.PeerCertificates[1:] {
					opts.Intermediates.AddCert(c)
				}
				_, err := cs.PeerCertificates[0].Verify(opts)
				return err
			}
		default:
			fail("option 'properties.ssl.endpoint.identification.algorithm' = '%s': must be 'https' or ''", alg)
		}
	}
	for k := range ssl {
		fail("option 'properties.%s': the Kafka client property is not supported (supported: ssl.truststore.location, ssl.truststore.password, ssl.truststore.certificates, ssl.truststore.type, ssl.keystore.location, ssl.keystore.password, ssl.key.password, ssl.keystore.key, ssl.keystore.certificate.chain, ssl.keystore.type, ssl.endpoint.identification.algorithm)", k)
	}
	if bad {
		return nil
	}
	return cfg
}
