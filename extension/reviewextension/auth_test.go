package reviewextension

import (
	"context"
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
// it from the TokenRequest API; rules, when set, are granted to it
// cluster-wide (namespace "") or in namespace.
func serviceAccountToken(t *testing.T, name, namespace string, rules ...rbacv1.PolicyRule) string {
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
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	expiry := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// listPolicies is the permission that the page asks for.
var listPolicies = rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"workloadnetworkpolicies"}, Verbs: []string{"list"}}

func request(t *testing.T, c *http.Client, method, url, token, accept string) (int, string, http.Header) { //nolint:unparam // method: a request helper names its method, though today's callers only GET.
	t.Helper()
	req, err := http.NewRequest(method, url, http.NoBody)
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

	// Nothing is served without a token the API server accepts for a user who
	// may list policies: not the page, not the graph, not the scripts.
	for _, path := range []string{"/", "/graph.json", "/graph.dot", "/graph.mmd", "/proposals/shop/deployment-web-ingress",
		"/policies/pay/deployment-api-ingress", "/static/review.js", "/third_party/cytoscape/cytoscape.min.js"} {
		for _, tc := range []struct {
			who, token string
			want       int
		}{
			{"no token", "", http.StatusUnauthorized},
			{"a bad token", "not-a-token", http.StatusUnauthorized},
			{"a ServiceAccount without the permission", forbidden, http.StatusForbidden},
			{"a ServiceAccount that may list policies", allowed, http.StatusOK},
		} {
			code, body, _ := request(t, noRedirect, http.MethodGet, base+path, tc.token, "")
			if code != tc.want {
				t.Errorf("GET %s with %s: %d %q, want %d", path, tc.who, code, body, tc.want)
			}
			if tc.want != http.StatusOK && strings.Contains(body, "deployment-") {
				t.Errorf("GET %s with %s shows objects: %q", path, tc.who, body)
			}
		}
	}
	// A browser without a token is sent to the login form.
	code, _, hdr := request(t, noRedirect, http.MethodGet, base+"/?namespace=pay", "", "text/html")
	if code != http.StatusSeeOther || hdr.Get("Location") != "/login?next="+url.QueryEscape("/?namespace=pay") {
		t.Errorf("browser without a token: %d to %q, want 303 to the login form", code, hdr.Get("Location"))
	}
	// A token allowed in one namespace sees that namespace, not the cluster.
	if code, _, _ := request(t, noRedirect, http.MethodGet, base+"/graph.json?namespace=pay", payOnly, ""); code != http.StatusOK {
		t.Errorf("pay reader on pay: %d, want 200", code)
	}
	for _, path := range []string{"/graph.json", "/graph.json?namespace=shop", "/proposals/shop/deployment-web-ingress"} {
		if code, _, _ := request(t, noRedirect, http.MethodGet, base+path, payOnly, ""); code != http.StatusForbidden {
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

	code, body, _ := request(t, c, http.MethodGet, base+"/", "", "text/html")
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
	if code, body = login(serviceAccountToken(t, "review-nobody", "")); code != http.StatusUnauthorized || !strings.Contains(body, "may not list workloadnetworkpolicies") {
		t.Errorf("login without the permission: %d\n%s", code, body)
	}
	if code, body = login("not-a-token"); code != http.StatusUnauthorized || !strings.Contains(body, "the token is not valid") {
		t.Errorf("login with a bad token: %d\n%s", code, body)
	}
	code, body = login(serviceAccountToken(t, "review-reader", "", listPolicies))
	if code != http.StatusOK || !strings.Contains(body, "Namespace shop") {
		t.Fatalf("login: %d, want the shop page\n%s", code, body)
	}
	// The cookie carries the token from then on, to the graph too.
	if code, body, _ := request(t, c, http.MethodGet, base+"/graph.json?namespace=shop", "", ""); code != http.StatusOK || !strings.Contains(body, "would-block") {
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
	if code, _, _ := request(t, c, http.MethodGet, base+"/graph.json", "", ""); code != http.StatusUnauthorized {
		t.Errorf("graph after logout: %d, want 401", code)
	}
}

func TestReadsTheSharedCache(t *testing.T) {
	controlplanetest.Require(t)
	_, h := startEnforcer(t, "review-cache")
	base := startReview(t, h, AuthModeAuto) // loopback: no token
	code, body, _ := request(t, http.DefaultClient, http.MethodGet, base+"/graph.mmd", "", "")
	if code != http.StatusOK {
		t.Fatalf("GET /graph.mmd: %d %s", code, body)
	}
	for _, want := range []string{`|"TCP/5432 violated"|`, `|"TCP/8443 protected"|`, `|"TCP/8080 would-block"|`, `|"unused unused"|`,
		`(["External 203.0.113.7/32"])`} {
		if !strings.Contains(body, want) {
			t.Errorf("Mermaid does not have %s:\n%s", want, body)
		}
	}
}
