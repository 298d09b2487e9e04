//go:build cluster

package cluster

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// ztunnelManifests are a ztunnel pod as the node agent finds it: istio-system,
// a name that starts with ztunnel-, a container istio-proxy, whose stdout the
// kubelet writes to /var/log/pods; the tests' pod program prints recorded
// ztunnel lines there. %[1]s is the testpod image.
const ztunnelManifests = `
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ztunnel
  namespace: istio-system
spec:
  selector:
    matchLabels: {app: ztunnel}
  template:
    metadata:
      labels: {app: ztunnel}
    spec:
      containers:
        - name: istio-proxy
          image: %[1]s
          imagePullPolicy: Never
          args: [ztunnel]
          ports:
            - {name: control, containerPort: 8081}
          volumeMounts:
            - {name: lines, mountPath: /etc/ztunnel, readOnly: true}
      volumes:
        - name: lines
          configMap: {name: ztunnel-lines}
`

// TestIstio runs the README's quickstart for Istio on the real node, with
// cert-manager: the network-enforcer node agent (the default) tails the ztunnel
// pod's real CRI log file and sends the records over mutual TLS, with key pairs
// that cert-manager issued, through the real headless Service, to the
// enforcer, whose receiver counts them. Then the certificates are made to live
// minutes and cert-manager renews them under traffic.
func TestIstio(t *testing.T) {
	requireCilium(t)
	installCertManager(t)
	installAuthorizationPolicyCRD(t)
	createNamespace(t, "istio-system")
	kubectl(t, "-n", "istio-system", "create", "configmap", "ztunnel-lines",
		"--from-file=ztunnel.jsonl="+filepath.Join(env.root, dataplanetest.ZtunnelFixture))

	// Two enforcers, the default collector and the node's agent.
	quickstartInstall(t, "istio", 4)
	logsOnFailure(t, namespace+"/"+enforcerPods, namespace+"/"+nodeAgentPods, "istio-system/app=ztunnel", "cert-manager/app=cert-manager")
	enforcers := listPods(t, namespace, enforcerPods)
	t.Logf("leader %s", waitLeader(t, enforcers))
	issuerMode(t, map[string]map[string]string{
		"deployment/" + fullname:                {"flows-tls": otlpServer, "events-tls": fullname + "-events-client"},
		"deployment/" + fullname + "-collector": {"server-tls": fullname + "-collector-server"},
		"daemonset/" + fullname + "-node-agent": {"client-tls": nodeAgentClient},
	})
	certs := issued(t, namespace, otlpServer)
	for _, p := range enforcers {
		c, err := served(t, net.JoinHostPort(p.IP, "4317"), otlpName, otlpServer, nodeAgentClient)
		if err != nil || !c.Equal(certs[otlpServer]) {
			t.Fatalf("enforcer %s serves OTLP with %v (%v), want the certificate of Secret %s", p.Name, c, err, otlpServer)
		}
	}

	// ztunnel starts after the node agent, which reads a file that appears
	// later from its start: what it prints is what the agent must send.
	apply(t, fmt.Sprintf(ztunnelManifests, testpodImage))
	waitFor(t, "ztunnel's records at the enforcer", 2*time.Minute, func() bool { return accepted(t, enforcers) > 0 })
	t.Run("journey", func(t *testing.T) {
		ztunnel := waitReady(t, "istio-system", "app=ztunnel", 1, time.Minute)[0]
		monitorJourney(t, ztunnelReporter(ztunnel))
		// Monitor mode is Istio's dry-run AuthorizationPolicy, which ztunnel
		// evaluates and logs without blocking.
		out := kubectl(t, "-n", "shop", "get", "authorizationpolicy", serverPolicy, "-o", `jsonpath={.metadata.annotations.istio\.io/dry-run}`)
		if strings.TrimSpace(out) != "true" {
			t.Errorf("the server's AuthorizationPolicy in monitor mode has istio.io/dry-run %q, want \"true\"", out)
		}
	})
	t.Run("renewal under traffic", renewalUnderTraffic)
}

// installAuthorizationPolicyCRD installs Istio's AuthorizationPolicy CRD, at
// the version whose types the enforcer renders, as an Istio install has it,
// and deletes it when the test ends.
func installAuthorizationPolicyCRD(t *testing.T) {
	t.Helper()
	crd, err := controlplanetest.IstioCRD(env.root, controlplanetest.AuthorizationPolicyCRD)
	if err != nil {
		t.Fatal(err)
	}
	crd.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	manifest, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, string(manifest))
	t.Cleanup(func() { _, _ = kubectlErr("", "delete", "crd", crd.Name, "--wait=true", "--timeout=60s") })
	waitEstablished(t, "crd/"+crd.Name)
}

// The Istio hop's key pairs, and the name that the node agents verify.
const (
	otlpServer      = fullname + "-otlp-server"
	nodeAgentClient = fullname + "-node-agent-client"
	otlpName        = fullname + "-otlp-headless." + namespace + ".svc"
)

// accepted is the sum of the records that the enforcers' ztunnel receivers
// accepted: the collector's standard count of the receiver. Its OTLP listeners
// count the same records again, under otlp/ztunnel, so the sum is of the one.
func accepted(t *testing.T, enforcers []pod) float64 {
	t.Helper()
	var sum float64
	for _, p := range enforcers {
		sum += metricSum("http://"+p.IP+":8888/metrics", "otelcol_receiver_accepted_log_records", `receiver="ztunnel"`)
	}
	return sum
}

// renewalUnderTraffic upgrades the release to certificates that live two
// minutes (cert-manager issues new ones at once, as their duration changed,
// and renews each a third of its life before it ends), sends a counted burst of
// connections from 30 seconds before cert-manager renews the enforcer's and
// the node agent's key pairs to ten seconds after every enforcer serves the
// renewed pair (a minute after the renewal at most), and checks that new
// connections get the renewed certificate and that every record of the burst
// reached the enforcer (none is lost; the wait below fails the test if one
// is).
func renewalUnderTraffic(t *testing.T) {
	ztunnel := waitReady(t, "istio-system", "app=ztunnel", 1, time.Minute)[0]
	control := "http://" + net.JoinHostPort(ztunnel.IP, "8081")
	if _, err := httpDo("GET", control+"/quiet", ""); err != nil {
		t.Fatal(err)
	}
	upgrade(t, "controller.certificateDuration=2m")
	var short *x509.Certificate
	waitFor(t, "a 2-minute certificate in "+otlpServer, 2*time.Minute, func() bool {
		short = parseCert(t, secretData(t, namespace, otlpServer, "tls.crt"))
		return short.NotAfter.Sub(short.NotBefore) <= 2*time.Minute
	})
	enforcers := waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)

	// The replay's last records reach the enforcer: the count stands still
	// for five times the node agent's longest retry interval, 1s (a standby
	// refuses records, and the agent resends them after a backoff).
	base := accepted(t, enforcers)
	for still := 0; still < 5; {
		// Time must pass because the records' end is seen only as their
		// count standing still: one second is the agent's longest retry.
		time.Sleep(time.Second)
		if n := accepted(t, enforcers); n != base {
			base, still = n, 0
			continue
		}
		still++
	}

	// cert-manager renews the key pair a third of its life before it ends:
	// the burst starts 30s before that and may last 90s, time for the
	// kubelet to update the mounted files and the enforcers to serve the new
	// pair (26s after the renewal in a CI run) while connections keep coming.
	renewal := short.NotAfter.Add(-short.NotAfter.Sub(short.NotBefore) / 3)
	if early := time.Until(renewal.Add(-30 * time.Second)); early > 0 {
		// Time must pass because the burst must start 30s before cert-manager
		// renews the key pair.
		time.Sleep(early)
	} else if time.Until(renewal) < 10*time.Second {
		t.Fatalf("the enforcers were ready %s before the renewal: too late for a burst across it", time.Until(renewal).Round(time.Second))
	}
	const lines = 180 // one every 500 ms: at most 90 seconds, across the renewal
	if _, err := httpDo("GET", control+"/burst?lines="+strconv.Itoa(lines)+"&every=500ms", ""); err != nil {
		t.Fatal(err)
	}
	burst := time.Now()
	var renewed *x509.Certificate
	waitFor(t, "cert-manager to renew "+otlpServer, 3*time.Minute, func() bool {
		renewed = parseCert(t, secretData(t, namespace, otlpServer, "tls.crt"))
		return renewed.NotBefore.After(short.NotBefore)
	})
	if oldKey, newKey := publicKey(t, short), publicKey(t, renewed); bytes.Equal(oldKey, newKey) {
		t.Error("the renewed certificate has the old key: rotationPolicy Always makes a new one")
	}
	t.Logf("cert-manager renewed %s %s into the burst (serial %s → %s)", otlpServer, time.Since(burst).Round(time.Second), short.SerialNumber, renewed.SerialNumber)
	// The kubelet updates the mounted files; the enforcer re-reads them for a
	// new connection (reload_interval).
	waitFor(t, "every enforcer to serve the renewed certificate", 2*time.Minute, func() bool {
		for _, p := range enforcers {
			c, err := served(t, net.JoinHostPort(p.IP, "4317"), otlpName, otlpServer, nodeAgentClient)
			if err != nil || c.NotBefore.Before(renewed.NotBefore) {
				return false
			}
		}
		return true
	})
	served := time.Since(burst)
	t.Logf("every enforcer served the renewed certificate %s into the burst of %s", served.Round(time.Second), time.Duration(lines)*500*time.Millisecond)
	if served > time.Duration(lines)*500*time.Millisecond {
		t.Errorf("the enforcers served the renewed certificate %s into the burst, after its last line: the hand-over was not under traffic", served.Round(time.Second))
	}

	// Time must pass because the burst goes on across the hand-over: new
	// connections for ten seconds after every enforcer serves the renewed
	// pair, then the burst ends rather than run out its length.
	time.Sleep(10 * time.Second)
	out, err := httpDo("GET", control+"/stop", "")
	if err != nil {
		t.Fatal(err)
	}
	sent, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("/stop: %v", err)
	}
	var got float64
	// The poll's own interval, so that the loop does not spin while it waits
	// for the records.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if got = accepted(t, enforcers) - base; got >= float64(sent) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2m the enforcers had accepted %v of the burst's %d records", got, sent)
		}
	}
	// OTLP delivery is at least once: a sender that retries a request the
	// leader took sends its records twice. Count those too: time must pass
	// because a record sent twice leaves no trace before it comes, so wait
	// five of the node agent's longest retry intervals (1s).
	time.Sleep(5 * time.Second)
	got = accepted(t, enforcers) - base
	t.Logf("burst of %d connections across the renewal: %v records accepted by the enforcers, none lost, %v more than sent", sent, got, got-float64(sent))
	if got > float64(sent) {
		// What a person would read to find why: the node agent's restarts
		// (a restarted agent reads again from its last checkpoint) and its
		// exporter's retries (a request that timed out after the leader took
		// it is sent again).
		t.Log(kubectl(t, "-n", namespace, "get", "pods", "-l", nodeAgentPods, "-o", "wide"))
		out, _ := kubectlErr("", "-n", namespace, "logs", "-l", nodeAgentPods, "--tail=-1")
		var standby int
		var others []string
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.Contains(l, "standby"):
				standby++
			case strings.Contains(l, "retry") || strings.Contains(l, "rror"):
				others = append(others, l)
			}
		}
		t.Logf("the node agent's logs: %d refusals by the standby; %d other errors and retries, the last 20:\n%s",
			standby, len(others), strings.Join(others[max(len(others)-20, 0):], "\n"))
	}
}

// issuerMode checks that each workload mounts the Secret of its hop's
// Certificate (issuer mode: cert-manager's key pairs, no CSI volume) and that
// cert-manager issued each of them.
func issuerMode(t *testing.T, want map[string]map[string]string) {
	t.Helper()
	for workload, volumes := range want {
		kind, name, _ := strings.Cut(workload, "/")
		got := mounts(t, kind, name)
		for vol, secret := range volumes {
			if got[vol] != secret {
				t.Errorf("%s mounts %q as volume %s, want the Secret %s of its Certificate", workload, got[vol], vol, secret)
			}
			issued(t, namespace, secret)
		}
	}
}

// publicKey is a certificate's public key, DER encoded.
func publicKey(t *testing.T, c *x509.Certificate) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(c.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
