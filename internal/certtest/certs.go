// Package certtest makes a certificate authority and certificates signed by it,
// written as PEM files, for tests of TLS and mutual TLS over real connections,
// and for the demo.
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
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority that signs test certificates.
type CA struct {
	// CertFile is the PEM file of the CA certificate, KeyFile that of its key
	// (PKCS #8), for a test that hands the CA itself to an issuer.
	CertFile, KeyFile string

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
	pool *x509.CertPool
}

// Pair is a signed certificate and its key, as PEM files and as a tls.Certificate.
type Pair struct {
	CertFile, KeyFile string
	TLS               tls.Certificate
}

// NewCA makes a CA whose files live in a temporary folder of the test.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := NewCAIn(t.TempDir(), name)
	must(t, err)
	return ca
}

// NewCAIn makes a CA whose files, and those of the certificates it issues, are
// written to dir.
func NewCAIn(dir, name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{cert: cert, key: key, dir: dir, pool: x509.NewCertPool()}
	ca.pool.AddCert(cert)
	if ca.CertFile, err = writePEM(filepath.Join(dir, name+"-ca.crt"), "CERTIFICATE", der); err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	ca.KeyFile, err = writePEM(filepath.Join(dir, name+"-ca.key"), "PRIVATE KEY", keyDER)
	return ca, err
}

// Pool returns a pool that trusts the CA.
func (ca *CA) Pool() *x509.CertPool { return ca.pool }

// Server issues a server certificate for the DNS names given, and for 127.0.0.1
// and ::1.
func (ca *CA) Server(t testing.TB, name string, dnsNames ...string) Pair {
	t.Helper()
	p, err := ca.IssueServer(name, dnsNames...)
	must(t, err)
	return p
}

// Client issues a client certificate with the common name given.
func (ca *CA) Client(t testing.TB, name string) Pair {
	t.Helper()
	p, err := ca.IssueClient(name)
	must(t, err)
	return p
}

// IssueServer is Server outside a test.
func (ca *CA) IssueServer(name string, dnsNames ...string) (Pair, error) {
	return ca.issue(name, dnsNames, x509.ExtKeyUsageServerAuth)
}

// IssueClient is Client outside a test.
func (ca *CA) IssueClient(name string) (Pair, error) {
	return ca.issue(name, nil, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(name string, dnsNames []string, usage x509.ExtKeyUsage) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     dnsNames,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	var p Pair
	if p.CertFile, err = writePEM(filepath.Join(ca.dir, name+".crt"), "CERTIFICATE", der); err != nil {
		return Pair{}, err
	}
	if p.KeyFile, err = writePEM(filepath.Join(ca.dir, name+".key"), "PRIVATE KEY", keyDER); err != nil {
		return Pair{}, err
	}
	p.TLS, err = tls.LoadX509KeyPair(p.CertFile, p.KeyFile)
	return p, err
}

// ServerTLS returns a server TLS configuration with the pair, which requires and
// verifies a client certificate signed by clientCA when clientCA is not nil.
func ServerTLS(pair Pair, clientCA *CA) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{pair.TLS}, MinVersion: tls.VersionTLS12}
	if clientCA != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = clientCA.Pool()
	}
	return cfg
}

// serial is a random serial number; crypto/rand does not fail.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func writePEM(path, typ string, der []byte) (string, error) {
	return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
