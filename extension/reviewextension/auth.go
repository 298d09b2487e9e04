package reviewextension

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// tokenCookie holds the token that the login form took.
const tokenCookie = "network_enforcer_review_token"

// policiesResource is what a reader must be allowed to list: the page shows
// policies and their proposals, so whoever may list the policies may see it.
const policiesResource = "workloadnetworkpolicies"

// errNoToken: the request carries no token at all.
var errNoToken = errors.New("no token")

// errInvalidToken: the API server does not accept the token.
var errInvalidToken = errors.New("the token is not valid")

// authenticator checks bearer tokens with the API server: a TokenReview says
// who the token is, a SubjectAccessReview whether that user may list
// policies (in the namespace the request is about, or cluster-wide).
type authenticator struct {
	cs  kubernetes.Interface
	ttl time.Duration

	mu      sync.Mutex
	answers map[answerKey]answer
}

type answerKey struct {
	token     [sha256.Size]byte // the token's hash: the cache keeps no token
	namespace string
}

type answer struct {
	user    string
	err     error
	expires time.Time
}

func newAuthenticator(cs kubernetes.Interface, ttl time.Duration) *authenticator {
	return &authenticator{cs: cs, ttl: ttl, answers: map[answerKey]answer{}}
}

// requestToken is the request's bearer token, from the Authorization header or
// the login cookie.
func requestToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
		return ""
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		return c.Value
	}
	return ""
}

// check returns nil when the user of token may list policies in namespace
// ("" for every namespace).
func (a *authenticator) check(ctx context.Context, token, namespace string) error {
	if token == "" {
		return errNoToken
	}
	key := answerKey{token: sha256.Sum256([]byte(token)), namespace: namespace}
	now := time.Now()
	a.mu.Lock()
	if ans, ok := a.answers[key]; ok && now.Before(ans.expires) {
		a.mu.Unlock()
		return ans.err
	}
	a.mu.Unlock()
	user, err := a.review(ctx, token, namespace)
	if ctx.Err() == nil && !isTransient(err) {
		a.mu.Lock()
		for k, ans := range a.answers { // the cache holds the answers of one TTL only
			if !now.Before(ans.expires) {
				delete(a.answers, k)
			}
		}
		a.answers[key] = answer{user: user, err: err, expires: now.Add(a.ttl)}
		a.mu.Unlock()
	}
	return err
}

// transientError is an API server that did not answer: not remembered, so
// that the next request asks again.
type transientError struct{ err error }

func (e transientError) Error() string {
	return "the API server did not review the token: " + e.err.Error()
}

func isTransient(err error) bool {
	var t transientError
	return errors.As(err, &t)
}

func (a *authenticator) review(ctx context.Context, token, namespace string) (string, error) {
	tr, err := a.cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", transientError{err}
	}
	if !tr.Status.Authenticated {
		return "", errInvalidToken
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "list", Group: v1alpha1.GroupVersion.Group, Resource: policiesResource, Namespace: namespace,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", transientError{err}
	}
	if !sar.Status.Allowed {
		where := "cluster-wide"
		if namespace != "" {
			where = "in namespace " + namespace
		}
		return "", fmt.Errorf("%s may not list %s.%s %s", u.Username, policiesResource, v1alpha1.GroupVersion.Group, where)
	}
	return u.Username, nil
}
