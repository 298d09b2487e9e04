package reviewextension

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// loginCookie logs in with token through the form, without following the
// redirect, and returns the token cookie that the answer sets.
func loginCookie(t *testing.T, c *http.Client, base, token string) *http.Cookie {
	t.Helper()
	noRedirect := *c
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.PostForm(base+"/login", url.Values{"token": {token}, "next": {"/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("login: %d, want 303\n%s", resp.StatusCode, b)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == tokenCookie {
			return ck
		}
	}
	t.Fatalf("login set no %s cookie: %v", tokenCookie, resp.Cookies())
	return nil
}

// TestTLS serves the page with the certificate that tls::cert_file and
// tls::key_file name: a client that trusts its CA reads the page and logs in,
// and the login cookie is Secure (as well as HttpOnly and SameSite=Strict),
// so that the browser never sends the token in clear. Plain HTTP on the TLS
// port gets no page.
func TestTLS(t *testing.T) {
	controlplanetest.Require(t)
	ca := certtest.NewCA(t, "review")
	pair := ca.Server(t, "review", "localhost")
	_, h := startEnforcer(t, "review-tls")
	base := startReviewWith(t, h, func(c *Config) {
		c.Access.Mode = AuthModeToken
		c.TLS = configoptional.Some(configtls.ServerConfig{Config: configtls.Config{CertFile: pair.CertFile, KeyFile: pair.KeyFile}})
	})
	if !strings.HasPrefix(base, "https://127.0.0.1:") {
		t.Fatalf("the page's URL is %s, want https", base)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	code, body, _ := request(t, c, base+"/login", "", "text/html")
	if code != http.StatusOK || !strings.Contains(body, `id="login"`) {
		t.Fatalf("GET /login over TLS: %d\n%s", code, body)
	}
	token := serviceAccountToken(t, "review-reader", "", listPolicies)
	ck := loginCookie(t, c, base, token)
	if !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Value != token {
		t.Errorf("login cookie over TLS: Secure %v, HttpOnly %v, SameSite %v, want Secure, HttpOnly, Strict", ck.Secure, ck.HttpOnly, ck.SameSite)
	}
	if code, _, _ := request(t, c, base+"/graph.json", token, ""); code != http.StatusOK {
		t.Errorf("graph.json over TLS: %d", code)
	}
	plain := "http://" + strings.TrimPrefix(base, "https://")
	if code, body, _ := request(t, http.DefaultClient, plain+"/login", "", ""); code == http.StatusOK || strings.Contains(body, `id="login"`) {
		t.Errorf("plain HTTP on the TLS port: %d %q, want no page", code, body)
	}
	// A client that does not trust the CA does not get through.
	if resp, err := http.Get(base + "/login"); err == nil {
		resp.Body.Close()
		t.Error("a client without the CA reached the page")
	}
}

// TestCookieWithoutTLS: served in plain HTTP (loopback, or behind a proxy
// that terminates TLS), the cookie cannot be Secure, or the browser would
// never send it back; it stays HttpOnly and SameSite=Strict.
func TestCookieWithoutTLS(t *testing.T) {
	controlplanetest.Require(t)
	_, h := startEnforcer(t, "review-cookie")
	base := startReview(t, h, AuthModeToken)
	token := serviceAccountToken(t, "review-reader", "", listPolicies)
	ck := loginCookie(t, http.DefaultClient, base, token)
	if ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("login cookie over HTTP: Secure %v, HttpOnly %v, SameSite %v, want HttpOnly, Strict, not Secure", ck.Secure, ck.HttpOnly, ck.SameSite)
	}
}
