package certtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Tools returns the paths of Java's keytool and openssl, which make the
// JKS and PKCS12 stores Kafka users have; without them the test fails
// when WEIR_REQUIRE_KEYTOOL is set (scripts/test.sh installs them) and
// is skipped otherwise.
func Tools(t testing.TB) (keytool, openssl string) {
	t.Helper()
	k, err1 := exec.LookPath("keytool")
	o, err2 := exec.LookPath("openssl")
	if err1 != nil || err2 != nil {
		if os.Getenv("WEIR_REQUIRE_KEYTOOL") != "" {
			t.Fatal("keytool or openssl is not installed: bash scripts/keytool.sh install")
		}
		t.Skip("keytool or openssl is not installed (bash scripts/keytool.sh install)")
	}
	return k, o
}

// Run runs a tool, failing the test with its output.
func Run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// TrustStore writes, with keytool, a trust store of type typ (JKS or
// PKCS12) in dir holding the certificate certPEM as a trusted entry, and
// returns its path.
func TrustStore(t testing.TB, dir, typ, password string, certPEM []byte) string {
	t.Helper()
	keytool, _ := Tools(t)
	pemFile := filepath.Join(dir, "trusted.pem")
	if err := os.WriteFile(pemFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "trust."+strings.ToLower(typ))
	Run(t, keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", pemFile, "-keystore", path, "-storetype", typ, "-storepass", password)
	return path
}
