package kafka_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/weirstream/weir/internal/testing/certtest"
)

// Kafka's default stores, Java's: trust and key stores made by keytool
// (JKS, PKCS12) and openssl (PKCS12), as a Flink user's job file names
// them, connect over mutual TLS with SASL; a wrong store password fails
// the statement with the store's name.
func TestJavaKeyStores(t *testing.T) {
	keytool, openssl := certtest.Tools(t)
	cert, err := certtest.New()
	if err != nil {
		t.Fatal(err)
	}
	server := cert.Server()
	server.ClientAuth, server.ClientCAs = tls.RequireAndVerifyClientCert, cert.Pool
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "k"), kfake.TLS(server), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "alice", "secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	pemCert, pemKey := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(pemCert, cert.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pemKey, cert.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	// trust stores: the certificate as a trusted entry, JKS and PKCS12
	certtest.Run(t, keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", pemCert, "-keystore", p("trust.jks"), "-storetype", "JKS", "-storepass", "trustpw")
	certtest.Run(t, keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", pemCert, "-keystore", p("trust.p12"), "-storetype", "PKCS12", "-storepass", "trustpw")
	// key stores: openssl's PKCS12, and keytool's JKS made from it with a
	// key password of its own
	certtest.Run(t, openssl, "pkcs12", "-export", "-in", pemCert, "-inkey", pemKey, "-name", "client", "-out", p("client.p12"), "-passout", "pass:keypw")
	certtest.Run(t, keytool, "-importkeystore", "-noprompt", "-srckeystore", p("client.p12"), "-srcstoretype", "PKCS12", "-srcstorepass", "keypw",
		"-destkeystore", p("client.jks"), "-deststoretype", "JKS", "-deststorepass", "storepw", "-destkeypass", "entrypw")
	table := func(props string) string {
		return `CREATE TABLE t (id BIGINT, name STRING) WITH ('connector' = 'kafka', 'topic' = 'k', 'properties.bootstrap.servers' = '` + strings.Join(c.ListenAddrs(), ",") + `',
'format' = 'json', 'scan.bounded.mode' = 'latest-offset', 'properties.default.api.timeout.ms' = '2000',
'properties.security.protocol' = 'SASL_SSL',
'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="secret";'` + props + `);
`
	}
	jks := `, 'properties.ssl.truststore.location' = '` + p("trust.jks") + `', 'properties.ssl.truststore.password' = 'trustpw',
'properties.ssl.keystore.location' = '` + p("client.jks") + `', 'properties.ssl.keystore.password' = 'storepw', 'properties.ssl.key.password' = 'entrypw'`
	pkcs12 := `, 'properties.ssl.truststore.type' = 'PKCS12', 'properties.ssl.truststore.location' = '` + p("trust.p12") + `', 'properties.ssl.truststore.password' = 'trustpw',
'properties.ssl.keystore.type' = 'PKCS12', 'properties.ssl.keystore.location' = '` + p("client.p12") + `', 'properties.ssl.keystore.password' = 'keypw'`
	if _, err := runSQL(t, table(jks)+"INSERT INTO t VALUES (1, 'a'), (2, 'b');"); err != nil {
		t.Fatalf("JKS stores (types from the files): write: %v", err)
	}
	want := []string{"+I[1, a]", "+I[2, b]"}
	for name, props := range map[string]string{"JKS": jks, "PKCS12": pkcs12} {
		got, err := runSQL(t, table(props)+"SELECT * FROM t;")
		if err != nil {
			t.Fatalf("%s: read: %v", name, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: got %q, want %q", name, got, want)
		}
	}
	for _, bad := range []struct{ props, want string }{
		{strings.Replace(jks, "'trustpw'", "'nope'", 1), p("trust.jks")},
		{strings.Replace(jks, "'entrypw'", "'nope'", 1), "a wrong 'properties.ssl.key.password'?"},
		{strings.Replace(pkcs12, "'keypw'", "'nope'", 1), p("client.p12")},
		{strings.Replace(jks, ", 'properties.ssl.truststore.password' = 'trustpw'", "", 1), "needs its password"},
	} {
		if _, err := runSQL(t, table(bad.props)+"SELECT * FROM t;"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s:\n got %v\nwant an error with %q", bad.props, err, bad.want)
		}
	}
}
