// Package keystore reads the key and trust stores Java programs use, as
// Kafka's clients and Confluent's schema registry clients (and so Flink's
// connectors) take them: JKS (Java's own format, read with
// github.com/pavlo-v-chernykh/keystore-go), PKCS#12 (as keytool and
// openssl write it, read with software.sslmate.com/src/go-pkcs12) and PEM.
// A store's type is the one given ('ssl.truststore.type' and the like),
// else the one its content shows: a PEM block, JKS's magic number, else
// PKCS#12.
package keystore

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// storeType returns the type of a store file: typ as given (upper case),
// else the one its content shows.
func storeType(typ string, data []byte) string {
	if typ != "" {
		return strings.ToUpper(typ)
	}
	if p, _ := pem.Decode(data); p != nil {
		return "PEM"
	}
	if len(data) >= 4 && binary.BigEndian.Uint32(data) == 0xfeedfeed {
		return "JKS"
	}
	return "PKCS12"
}

// trustedCerts reads the trusted certificates of a JKS or PKCS12 store.
func trustedCerts(typ string, data []byte, password string) ([]*x509.Certificate, error) {
	switch typ {
	case "JKS":
		if password == "" {
			return nil, errors.New("a JKS store needs its password ('ssl.truststore.password') to be checked")
		}
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
			return nil, fmt.Errorf("reading it as JKS: %w", err)
		}
		var certs []*x509.Certificate
		for _, alias := range ks.Aliases() {
			if !ks.IsTrustedCertificateEntry(alias) {
				continue
			}
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, fmt.Errorf("entry %q: %w", alias, err)
			}
			c, err := x509.ParseCertificate(e.Certificate.Content)
			if err != nil {
				return nil, fmt.Errorf("entry %q: %w", alias, err)
			}
			certs = append(certs, c)
		}
		if len(certs) == 0 {
			return nil, errors.New("the JKS store holds no trusted certificate entry")
		}
		return certs, nil
	case "PKCS12":
		certs, err := pkcs12.DecodeTrustStore(data, password)
		if err == nil && len(certs) > 0 {
			return certs, nil
		}
		// a store of a key and its chain: trust its certificates
		_, cert, cas, err2 := pkcs12.DecodeChain(data, password)
		if err2 != nil {
			if err == nil {
				err = err2
			}
			return nil, fmt.Errorf("reading it as PKCS12: %w", err)
		}
		return append([]*x509.Certificate{cert}, cas...), nil
	}
	return nil, fmt.Errorf("store type %q: want JKS, PKCS12 or PEM", typ)
}

// keyPair reads the private key and its certificate chain of a JKS or
// PKCS12 key store; keyPassword (JKS) defaults to the store's.
func keyPair(typ string, data []byte, password, keyPassword string) (tls.Certificate, error) {
	switch typ {
	case "JKS":
		if password == "" {
			return tls.Certificate{}, errors.New("a JKS store needs its password ('ssl.keystore.password')")
		}
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
			return tls.Certificate{}, fmt.Errorf("reading it as JKS: %w", err)
		}
		if keyPassword == "" {
			keyPassword = password
		}
		var keys []string
		for _, alias := range ks.Aliases() {
			if ks.IsPrivateKeyEntry(alias) {
				keys = append(keys, alias)
			}
		}
		if len(keys) != 1 {
			return tls.Certificate{}, fmt.Errorf("the JKS store holds %d private key entries, want one", len(keys))
		}
		e, err := ks.GetPrivateKeyEntry(keys[0], []byte(keyPassword))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("entry %q (a wrong 'properties.ssl.key.password'?): %w", keys[0], err)
		}
		key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("entry %q: %w", keys[0], err)
		}
		cert := tls.Certificate{PrivateKey: key}
		for _, c := range e.CertificateChain {
			cert.Certificate = append(cert.Certificate, c.Content)
		}
		if len(cert.Certificate) == 0 {
			return tls.Certificate{}, fmt.Errorf("entry %q has no certificate", keys[0])
		}
		return cert, nil
	case "PKCS12":
		key, c, cas, err := pkcs12.DecodeChain(data, password)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("reading it as PKCS12: %w", err)
		}
		cert := tls.Certificate{PrivateKey: key, Certificate: [][]byte{c.Raw}, Leaf: c}
		for _, ca := range cas {
			cert.Certificate = append(cert.Certificate, ca.Raw)
		}
		return cert, nil
	}
	return tls.Certificate{}, fmt.Errorf("store type %q: want JKS, PKCS12 or PEM", typ)
}

// Trust reads the CA certificates of a store file of type typ ("" for the
// one its content shows): a PEM bundle, or the trusted entries of a JKS
// store (password required: its integrity is checked) or of a PKCS12 one.
// Errors name the file.
func Trust(path, typ, password string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := storeType(typ, data)
	if t == "PEM" {
		var certs []*x509.Certificate
		for rest := data; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			certs = append(certs, c)
		}
		if len(certs) == 0 {
			return nil, fmt.Errorf("%s holds no PEM certificate", path)
		}
		return certs, nil
	}
	certs, err := trustedCerts(t, data, password)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return certs, nil
}

// KeyPair reads a client's private key and certificate chain from a store
// file of type typ ("" for the one its content shows): a PEM file with
// both (unencrypted), or a JKS or PKCS12 store with one private key entry
// (keyPassword: a JKS key's own password, default password). Errors name
// the file.
func KeyPair(path, typ, password, keyPassword string) (tls.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return tls.Certificate{}, err
	}
	t := storeType(typ, data)
	if t == "PEM" {
		if keyPassword != "" {
			return tls.Certificate{}, fmt.Errorf("%s: encrypted PEM keys are not supported; give the key unencrypted, or a JKS or PKCS12 store", path)
		}
		c, err := tls.X509KeyPair(data, data)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("%s: %w (a PEM file with the certificate and its key)", path, err)
		}
		return c, nil
	}
	c, err := keyPair(t, data, password, keyPassword)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Pool returns a certificate pool of certs.
func Pool(certs []*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}
