package reviewextension

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
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

// refusedTokenError: the API server does not accept the token for the page's
// audience. apiServer says that it accepts it for its own: a token made
// without --audience, the most common mistake, which the message names.
type refusedTokenError struct {
	audience  string
	apiServer bool
}

func (e refusedTokenError) Error() string {
	why := "the token is not valid for this page's audience %q (expired, or made for another audience)"
	if e.apiServer {
		why = "the token is for the API server, not for this page's audience %q"
	}
	return fmt.Sprintf(why+": make one with `kubectl create token <service-account> --audience %s`", e.audience, e.audience)
}

// Is makes a refused token an invalid token: a 401.
func (refusedTokenError) Is(target error) bool { return target == errInvalidToken }

// authenticator checks bearer tokens with the API server: a TokenReview says
// who the token is, a SubjectAccessReview whether that user may list
// policies (in the namespace the request is about, or cluster-wide).
type authenticator struct {
	cs       kubernetes.Interface
	ttl      time.Duration
	audience string

	mu      sync.Mutex
	answers map[answerKey]answer
}

type answerKey struct {
	token     [sha256.Size]byte // the token's hash: the cache keeps no token
	namespace string
}

type answer struct {
	err     error
	expires time.Time
}

func newAuthenticator(cs kubernetes.Interface, ttl time.Duration, audience string) *authenticator {
	return &authenticator{cs: cs, ttl: ttl, audience: audience, answers: map[answerKey]answer{}}
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

func (a *authenticator) tokenReview(ctx context.Context, token string, audiences []string) (*authenticationv1.TokenReview, error) {
	tr, err := a.cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, transientError{err}
	}
	return tr, nil
}

// whyRefused tells a token for the API server from other refused tokens, by
// asking again for the API server's own audiences, so that the login form
// says what was wrong; both say how to make the right one.
func (a *authenticator) whyRefused(ctx context.Context, token string) error {
	tr, err := a.tokenReview(ctx, token, nil)
	if err != nil {
		return err
	}
	return refusedTokenError{audience: a.audience, apiServer: tr.Status.Authenticated}
}

// check returns nil when the user of token may list policies in namespace
// ("" for every namespace), and why not otherwise.
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
	_, err := a.review(ctx, token, namespace)
	if ctx.Err() == nil && !isTransient(err) {
		a.mu.Lock()
		for k, ans := range a.answers { // the cache holds the answers of one TTL only
			if !now.Before(ans.expires) {
				delete(a.answers, k)
			}
		}
		a.answers[key] = answer{err: err, expires: now.Add(a.ttl)}
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
	tr, err := a.tokenReview(ctx, token, []string{a.audience})
	if err != nil {
		return "", err
	}
	// An authenticator that does not know audiences answers with none: the
	// token was not checked against ours.
	if !tr.Status.Authenticated || !slices.Contains(tr.Status.Audiences, a.audience) {
		return "", a.whyRefused(ctx, token)
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
