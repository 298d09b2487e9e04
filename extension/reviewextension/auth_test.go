package reviewextension

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// serviceAccountToken makes a ServiceAccount in default and returns a token of
// it for the page's default audience, from the TokenRequest API, as `kubectl
// create token NAME --audience network-enforcer-review` makes one; rules, when
// set, are granted to it cluster-wide (namespace "") or in namespace.
func serviceAccountToken(t *testing.T, name, namespace string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	serviceAccount(t, name, namespace, rules...)
	return mintToken(t, name, DefaultAudience)
}

// serviceAccount makes the ServiceAccount name in default, with rules granted
// cluster-wide (namespace "") or in namespace.
func serviceAccount(t *testing.T, name, namespace string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if err := client.IgnoreAlreadyExists(env.Client.Create(ctx, sa)); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}}
	if len(rules) > 0 && namespace == "" {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
		for _, o := range []client.Object{role, binding} {
			if err := client.IgnoreAlreadyExists(env.Client.Create(ctx, o)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(rules) > 0 && namespace != "" {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: rules}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
		for _, o := range []client.Object{role, binding} {
			if err := client.IgnoreAlreadyExists(env.Client.Create(ctx, o)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// mintToken asks the TokenRequest API for a token of ServiceAccount name (in
// default) for audiences; none is the API server's own audience, as `kubectl
// create token NAME` without --audience.
func mintToken(t *testing.T, name string, audiences ...string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	expiry := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry, Audiences: audiences}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// listPolicies is the permission that the page asks for.
var listPolicies = rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"workloadnetworkpolicies"}, Verbs: []string{"list"}}

// request GETs url with a bearer token and an Accept header, when given.
func request(t *testing.T, c *http.Client, url, token, accept string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestTokenRequired(t *testing.T) {
	controlplanetest.Require(t)
	_, h := startEnforcer(t, "review-auth")
	base := startReview(t, h, AuthModeToken)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	forbidden := serviceAccountToken(t, "review-nobody", "")
	allowed := serviceAccountToken(t, "review-reader", "", listPolicies)
	payOnly := serviceAccountToken(t, "review-pay-reader", "pay", listPolicies)

	// Nothing about the cluster is served without a token the API server
	// accepts for a user who may list policies: not the page, not the graph,
	// not an object's view.
	for _, path := range []string{"/", "/graph.json", "/graph.dot", "/graph.mmd", "/proposals/shop/deployment-web-ingress",
		"/policies/pay/deployment-api-ingress"} {
		for _, tc := range []struct {
			who, token string
			want       int
		}{
			{"no token", "", http.StatusUnauthorized},
			{"a bad token", "not-a-token", http.StatusUnauthorized},
			{"a ServiceAccount without the permission", forbidden, http.StatusForbidden},
			{"a ServiceAccount that may list policies", allowed, http.StatusOK},
		} {
			code, body, _ := request(t, noRedirect, base+path, tc.token, "")
			if code != tc.want {
				t.Errorf("GET %s with %s: %d %q, want %d", path, tc.who, code, body, tc.want)
			}
			if tc.want != http.StatusOK && strings.Contains(body, "deployment-") {
				t.Errorf("GET %s with %s shows objects: %q", path, tc.who, body)
			}
		}
	}
	// A browser without a token is sent to the login form.
	code, _, hdr := request(t, noRedirect, base+"/?namespace=pay", "", "text/html")
	if code != http.StatusSeeOther || hdr.Get("Location") != "/login?next="+url.QueryEscape("/?namespace=pay") {
		t.Errorf("browser without a token: %d to %q, want 303 to the login form", code, hdr.Get("Location"))
	}
	// A token allowed in one namespace sees that namespace, not the cluster.
	if code, _, _ := request(t, noRedirect, base+"/graph.json?namespace=pay", payOnly, ""); code != http.StatusOK {
		t.Errorf("pay reader on pay: %d, want 200", code)
	}
	for _, path := range []string{"/graph.json", "/graph.json?namespace=shop", "/proposals/shop/deployment-web-ingress"} {
		if code, _, _ := request(t, noRedirect, base+path, payOnly, ""); code != http.StatusForbidden {
			t.Errorf("pay reader on %s: %d, want 403", path, code)
		}
	}
}

func TestLoginForm(t *testing.T) {
	controlplanetest.Require(t)
	_, h := startEnforcer(t, "review-login")
	base := startReview(t, h, AuthModeToken)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}

	code, body, _ := request(t, c, base+"/", "", "text/html")
	if code != http.StatusOK || !strings.Contains(body, `<form method="post" action="/login" id="login">`) {
		t.Fatalf("GET / without a token: %d, want the login form:\n%s", code, body)
	}
	login := func(token string) (int, string) {
		resp, err := c.PostForm(base+"/login", url.Values{"token": {token}, "next": {"/?namespace=shop"}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if got, page := login(serviceAccountToken(t, "review-nobody", "")); got != http.StatusUnauthorized || !strings.Contains(page, "may not list workloadnetworkpolicies") {
		t.Errorf("login without the permission: %d\n%s", got, page)
	}
	if got, page := login("not-a-token"); got != http.StatusUnauthorized || !strings.Contains(page, "the token is not valid for this page&#39;s audience") {
		t.Errorf("login with a bad token: %d\n%s", got, page)
	}
	code, body = login(serviceAccountToken(t, "review-reader", "", listPolicies))
	if code != http.StatusOK || !strings.Contains(body, "Namespace shop") {
		t.Fatalf("login: %d, want the shop page\n%s", code, body)
	}
	// The cookie carries the token from then on, to the graph too.
	if code, body, _ := request(t, c, base+"/graph.json?namespace=shop", "", ""); code != http.StatusOK || !strings.Contains(body, "would-block") {
		t.Errorf("graph after login: %d %s", code, body)
	}
	u, _ := url.Parse(base)
	for _, ck := range jar.Cookies(u) {
		if ck.Name == tokenCookie && ck.Value == "" {
			t.Error("empty cookie")
		}
	}
	resp, err := c.PostForm(base+"/logout", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, _, _ := request(t, c, base+"/graph.json", "", ""); code != http.StatusUnauthorized {
		t.Errorf("graph after logout: %d, want 401", code)
	}
}

func TestReadsTheSharedCache(t *testing.T) {
	controlplanetest.Require(t)
	_, h := startEnforcer(t, "review-cache")
	base := startReview(t, h, AuthModeAuto) // loopback: no token
	code, body, _ := request(t, http.DefaultClient, base+"/graph.mmd", "", "")
	if code != http.StatusOK {
		t.Fatalf("GET /graph.mmd: %d %s", code, body)
	}
	for _, want := range []string{`|"TCP/5432 ingress violated"|`, `|"TCP/8443 ingress protected"|`, `|"TCP/8080 ingress would-block"|`,
		`|"TCP/5432 egress learned, ingress monitored"|`, `|"unused"|`,
		`(["External 203.0.113.7/32"])`} {
		if !strings.Contains(body, want) {
			t.Errorf("Mermaid does not have %s:\n%s", want, body)
		}
	}
}

// TestAudience: a token is accepted only when it was made for the page's
// audience. A token for the API server itself (kubectl create token without
// --audience), which the page would otherwise keep in a cookie, is refused
// with the command that makes the right one; so is a token for another
// audience, and the audience is the configuration's.
func TestAudience(t *testing.T) {
	controlplanetest.Require(t)
	_, h := startEnforcer(t, "review-audience")
	base := startReview(t, h, AuthModeToken)
	serviceAccount(t, "review-reader", "", listPolicies)
	apiToken := mintToken(t, "review-reader")
	otherToken := mintToken(t, "review-reader", "vault")
	pageToken := mintToken(t, "review-reader", DefaultAudience)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	howTo := "make one with `kubectl create token &lt;service-account&gt; --audience " + DefaultAudience + "`"
	for _, tc := range []struct{ who, token, why string }{
		{"a token for the API server", apiToken, "the token is for the API server, not for this page&#39;s audience &#34;" + DefaultAudience + "&#34;"},
		{"a token for another audience", otherToken, "the token is not valid for this page&#39;s audience &#34;" + DefaultAudience + "&#34;"},
	} {
		code, body, _ := request(t, noRedirect, base+"/graph.json", tc.token, "")
		if code != http.StatusUnauthorized || !strings.Contains(body, html.UnescapeString(tc.why)) {
			t.Errorf("graph.json with %s: %d %q, want 401 saying %s", tc.who, code, body, html.UnescapeString(tc.why))
		}
		resp, err := noRedirect.PostForm(base+"/login", url.Values{"token": {tc.token}, "next": {"/"}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), tc.why) || !strings.Contains(string(b), howTo) || len(resp.Cookies()) != 0 {
			t.Errorf("login with %s: %d, cookies %v, want 401 saying %q, %q and no cookie:\n%s", tc.who, resp.StatusCode, resp.Cookies(), tc.why, howTo, b)
		}
	}
	if code, body, _ := request(t, noRedirect, base+"/graph.json", pageToken, ""); code != http.StatusOK {
		t.Errorf("a token for %s: %d %q, want 200", DefaultAudience, code, body)
	}
	// The login form says which audience to ask for.
	if code, body, _ := request(t, noRedirect, base+"/login", "", "text/html"); code != http.StatusOK ||
		!strings.Contains(body, "kubectl create token &lt;service-account&gt; -n &lt;namespace&gt; --audience "+DefaultAudience) {
		t.Errorf("login form: %d\n%s", code, body)
	}

	// Another audience configured: the default one is refused there.
	other := startReviewWith(t, h, func(c *Config) { c.Access.Mode, c.Access.Audience = AuthModeToken, "vault" })
	if code, body, _ := request(t, noRedirect, other+"/graph.json", pageToken, ""); code != http.StatusUnauthorized ||
		!strings.Contains(body, `not valid for this page's audience "vault"`) {
		t.Errorf("a %s token on a page for vault: %d %q, want 401", DefaultAudience, code, body)
	}
	if code, body, _ := request(t, noRedirect, other+"/graph.json", otherToken, ""); code != http.StatusOK {
		t.Errorf("a vault token on a page for vault: %d %q, want 200", code, body)
	}
}
