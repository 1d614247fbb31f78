// Package certtest makes the self-signed certificate that TLS tests use:
// a CA certificate for 127.0.0.1 that serves as the server's and, for
// mutual TLS, the client's, with its PEM forms for tests that write
// trust and key stores to files.
package certtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"
)

// Cert is a self-signed certificate for 127.0.0.1 and its key.
type Cert struct {
	TLS     tls.Certificate
	Pool    *x509.CertPool // holds the certificate: trust it
	CertPEM []byte
	KeyPEM  []byte // PKCS #8
}

// New makes a certificate valid from an hour ago for a day.
func New() (*Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "weir test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:        true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(parsed)
	return &Cert{
		TLS:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		Pool:    pool,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}, nil
}

// Server is a server's TLS configuration with the certificate.
func (c *Cert) Server() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.TLS}, MinVersion: tls.VersionTLS12}
}

// Client is a client's TLS configuration that trusts the certificate.
func (c *Cert) Client() *tls.Config {
	return &tls.Config{RootCAs: c.Pool, MinVersion: tls.VersionTLS12}
}
