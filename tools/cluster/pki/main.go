// Command pki writes the certificates, keys and kubeconfigs of the real
// single-node cluster that internal/realnodetest starts: one CA, the API
// server's serving certificate, the kubelet's serving certificate, client
// certificates for the admin (system:masters, which the control-plane parts and
// kube-router use too: a test cluster, not a hardened one), the API server's
// client to the kubelet, and the node, and the service-account signing key.
// With -hubble, it also writes into that folder what Cilium's chart issues for
// Hubble (hubble.tls.auto): a CA of its own, the agents' server certificate for
// *.<cluster>.hubble-grpc.cilium.io, and hubble-relay's client and server
// certificates for *.hubble-relay.cilium.io.
//
//	go run ./tools/cluster/pki -dir DIR -node NAME -ip 10.217.0.1 -service-ip 10.217.16.1 -server https://10.217.0.1:16443 [-hubble DIR2]
//
// Files that exist are kept, so that a restarted cluster keeps its CA.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pki:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "folder to write into")
	node := flag.String("node", "", "the node's name")
	ip := flag.String("ip", "", "the node's address, where the API server and the kubelet listen")
	serviceIP := flag.String("service-ip", "", "the ClusterIP of the kubernetes Service")
	server := flag.String("server", "", "the API server's URL, for the kubeconfigs")
	hubble := flag.String("hubble", "", "folder to write Cilium's Hubble certificates into (none when empty)")
	flag.Parse()
	if *dir == "" || *node == "" || *ip == "" || *serviceIP == "" || *server == "" {
		return errors.New("-dir, -node, -ip, -service-ip and -server are required")
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	p := pki{dir: *dir}
	if err := p.loadOrMakeCA("network-enforcer-realnode-ca"); err != nil {
		return err
	}
	ips := []net.IP{net.ParseIP(*ip), net.ParseIP(*serviceIP), net.ParseIP("127.0.0.1")}
	apiNames := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}
	steps := []struct {
		name string
		tmpl x509.Certificate
	}{
		{"apiserver", x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"}, DNSNames: apiNames, IPAddresses: ips,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}},
		{"kubelet", x509.Certificate{Subject: pkix.Name{CommonName: *node}, DNSNames: []string{*node, "localhost"}, IPAddresses: ips[:1],
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}},
		{"admin", x509.Certificate{Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}},
		{"apiserver-kubelet-client", x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}},
		{"node", x509.Certificate{Subject: pkix.Name{CommonName: "system:node:" + *node, Organization: []string{"system:nodes"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}},
	}
	for _, s := range steps {
		if err := p.issue(s.name, s.tmpl); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	if err := p.serviceAccountKey(); err != nil {
		return err
	}
	for _, kc := range []struct{ name, user string }{{"admin", "admin"}, {"node", "system:node:" + *node}} {
		if err := p.kubeconfig(kc.name, kc.user, *server); err != nil {
			return err
		}
	}
	if *hubble != "" {
		return hubbleCerts(*hubble)
	}
	return nil
}

// hubbleCerts writes the certificates of Cilium's chart for Hubble, named after
// the Secrets it puts them in: hubble-server (hubble-server-certs, the agents'),
// hubble-relay-client (hubble-relay-client-certs) and hubble-relay-server
// (hubble-relay-server-certs), all signed by one CA (cilium-ca), for the
// cluster name "default".
func hubbleCerts(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	p := pki{dir: dir}
	if err := p.loadOrMakeCA("Cilium CA"); err != nil {
		return err
	}
	server, relay := "*.default.hubble-grpc.cilium.io", "*.hubble-relay.cilium.io"
	for _, c := range []struct {
		name, cn string
		usage    x509.ExtKeyUsage
	}{
		{"hubble-server", server, x509.ExtKeyUsageServerAuth},
		{"hubble-relay-client", relay, x509.ExtKeyUsageClientAuth},
		{"hubble-relay-server", relay, x509.ExtKeyUsageServerAuth},
	} {
		tmpl := x509.Certificate{Subject: pkix.Name{CommonName: c.cn}, DNSNames: []string{c.cn}, ExtKeyUsage: []x509.ExtKeyUsage{c.usage}}
		if err := p.issue(c.name, tmpl); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
	serial int64
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func (p *pki) loadOrMakeCA(name string) error {
	certPath, keyPath := p.path("ca.crt"), p.path("ca.key")
	if !exists(certPath) || !exists(keyPath) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
			IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return err
		}
		if err := writeKey(keyPath, key); err != nil {
			return err
		}
		if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
			return err
		}
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return errors.New("ca.crt or ca.key is not PEM")
	}
	if p.ca, err = x509.ParseCertificate(cb.Bytes); err != nil {
		return err
	}
	if p.caKey, err = x509.ParseECPrivateKey(kb.Bytes); err != nil {
		return err
	}
	p.caPEM = certPEM
	p.serial = time.Now().UnixNano()
	return nil
}

// issue writes NAME.crt and NAME.key, signed by the CA, unless both exist.
func (p *pki) issue(name string, tmpl x509.Certificate) error {
	certPath, keyPath := p.path(name+".crt"), p.path(name+".key")
	if exists(certPath) && exists(keyPath) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	p.serial++
	tmpl.SerialNumber = big.NewInt(p.serial)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return err
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// serviceAccountKey writes sa.key and sa.pub, the key pair that signs and
// verifies ServiceAccount tokens.
func (p *pki) serviceAccountKey() error {
	if exists(p.path("sa.key")) && exists(p.path("sa.pub")) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(p.path("sa.key"), key); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	return os.WriteFile(p.path("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// kubeconfig writes NAME.kubeconfig for the client certificate NAME, always,
// since the server's URL may change between runs.
func (p *pki) kubeconfig(name, user, server string) error {
	cert, err := os.ReadFile(p.path(name + ".crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(p.path(name + ".key"))
	if err != nil {
		return err
	}
	b64 := base64.StdEncoding.EncodeToString
	doc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: realnode
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: realnode
  context:
    cluster: realnode
    user: %s
current-context: realnode
`, server, b64(p.caPEM), user, b64(cert), b64(key), user)
	return os.WriteFile(p.path(name+".kubeconfig"), []byte(doc), 0o600)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
