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

// A Flink table's Kafka security properties: SASL (PLAIN, SCRAM) over TLS
// with PEM trust and key stores, the client's certificate required by the
// broker. Without them, or with a wrong password, the job fails.
func TestSecurityProperties(t *testing.T) {
	cert, err := certtest.New()
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := cert.CertPEM, cert.KeyPEM
	server := cert.Server()
	server.ClientAuth, server.ClientCAs = tls.RequireAndVerifyClientCert, cert.Pool
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "p", "s"), kfake.TLS(server), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "alice", "secret"), kfake.Superuser("SCRAM-SHA-512", "bob", `hun"ter2`))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	servers := strings.Join(c.ListenAddrs(), ",")
	dir := t.TempDir()
	trust, keystore := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem")
	if err := os.WriteFile(trust, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keystore, append(append([]byte(nil), keyPEM...), certPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	sqlString := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	table := func(topic, props string) string {
		return `CREATE TABLE t (id BIGINT, name STRING) WITH ('connector' = 'kafka', 'topic' = '` + topic + `', 'properties.bootstrap.servers' = '` + servers + `',
'format' = 'json', 'scan.bounded.mode' = 'latest-offset', 'properties.default.api.timeout.ms' = '2000'` + props + `);
`
	}
	plainProps := `, 'properties.security.protocol' = 'SASL_SSL',
'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="secret";',
'properties.ssl.truststore.type' = 'PEM', 'properties.ssl.truststore.location' = '` + trust + `',
'properties.ssl.keystore.type' = 'PEM', 'properties.ssl.keystore.location' = '` + keystore + `'`
	scramProps := `, 'properties.security.protocol' = 'SASL_SSL', 'properties.sasl.mechanism' = 'SCRAM-SHA-512',
'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="hun\"ter2";',
'properties.ssl.truststore.certificates' = ` + sqlString(string(certPEM)) + `,
'properties.ssl.keystore.key' = ` + sqlString(string(keyPEM)) + `, 'properties.ssl.keystore.certificate.chain' = ` + sqlString(string(certPEM)) + `,
'properties.ssl.endpoint.identification.algorithm' = ''`
	want := []string{"+I[1, a]", "+I[2, b]"}
	for _, tc := range []struct{ name, topic, props string }{{"PLAIN", "p", plainProps}, {"SCRAM-SHA-512", "s", scramProps}} {
		if _, err := runSQL(t, table(tc.topic, tc.props)+"INSERT INTO t VALUES (1, 'a'), (2, 'b');"); err != nil {
			t.Fatalf("%s: write: %v", tc.name, err)
		}
		got, err := runSQL(t, table(tc.topic, tc.props)+"SELECT * FROM t;")
		if err != nil {
			t.Fatalf("%s: read: %v", tc.name, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: got %q, want %q", tc.name, got, want)
		}
	}
	// the properties are what makes it work
	for name, props := range map[string]string{
		"no security":    "",
		"wrong password": strings.Replace(plainProps, `password="secret"`, `password="wrong"`, 1),
		"no client cert": plainProps[:strings.Index(plainProps, `,
'properties.ssl.keystore.type'`)],
	} {
		if _, err := runSQL(t, table("p", props)+"SELECT * FROM t;"); err == nil {
			t.Errorf("%s: the read succeeded", name)
		}
	}
}

func TestSecurityPropertyErrors(t *testing.T) {
	for _, c := range []struct{ props, want string }{
		{`'properties.sasl.mechanism' = 'PLAIN'`, "'properties.sasl.*' needs 'properties.security.protocol' = 'SASL_SSL' or 'SASL_PLAINTEXT'"},
		{`'properties.security.protocol' = 'SASL_SSL'`, "'properties.sasl.jaas.config' is required with SASL"},
		{`'properties.security.protocol' = 'SASL_PLAINTEXT', 'properties.sasl.mechanism' = 'SCRAM-SHA-256', 'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'`,
			"SCRAM-SHA-256 needs Kafka's ScramLoginModule, not PlainLoginModule"},
		{`'properties.security.protocol' = 'SASL_PLAINTEXT', 'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="sec;'`,
			"the value of 'password' has no closing quote"},
		{`'properties.security.protocol' = 'SASL_PLAINTEXT', 'properties.sasl.mechanism' = 'GSSAPI', 'properties.sasl.jaas.config' = 'x.ScramLoginModule required username="u" password="p";'`,
			"'properties.sasl.mechanism' = 'GSSAPI': must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
		{`'properties.security.protocol' = 'SSL', 'properties.ssl.truststore.type' = 'JKS', 'properties.ssl.truststore.location' = '/nonexistent.jks'`, "'properties.ssl.truststore.location': open /nonexistent.jks: no such file or directory"},
		{`'properties.security.protocol' = 'SSL', 'properties.ssl.truststore.type' = 'BKS'`, "'properties.ssl.truststore.type' = 'BKS': must be JKS, PKCS12 or PEM"},
		{`'properties.security.protocol' = 'SSL', 'properties.ssl.truststore.location' = '/nonexistent.pem'`, "'properties.ssl.truststore.location': open /nonexistent.pem: no such file or directory"},
		{`'properties.security.protocol' = 'SSL', 'properties.ssl.key.password' = 'x'`, "'properties.ssl.key.password' needs 'properties.ssl.keystore.location'"},
		{`'properties.security.protocol' = 'SSL', 'properties.ssl.cipher.suites' = 'x'`, "'properties.ssl.cipher.suites': the Kafka client property is not supported"},
		{`'properties.ssl.truststore.certificates' = 'x'`, "'properties.ssl.*' need 'properties.security.protocol' = 'SSL' or 'SASL_SSL'"},
		{`'properties.security.protocol' = 'TLS'`, "must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"},
	} {
		_, err := runSQL(t, "CREATE TABLE t (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = 'x:1', 'format' = 'json', "+c.props+");\nSELECT * FROM t;")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got error %v\nwant one with %q", c.props, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "sec;") {
			t.Errorf("the error quotes the password: %v", err)
		}
	}
}
