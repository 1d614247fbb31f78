package kafka

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Java's key and trust stores, which Kafka's clients (and so Flink's
// Kafka connector) read by default: 'ssl.truststore.type' and
// 'ssl.keystore.type' are JKS (Kafka's default), PKCS12 or PEM. Without a
// type the file's content says which (a PEM block, JKS's magic number,
// else PKCS#12). JKS is read by github.com/pavlo-v-chernykh/keystore-go,
// PKCS#12 by software.sslmate.com/src/go-pkcs12 (modern and legacy
// encryption, as keytool and openssl write them).

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
