package reviewextension

import (
	"errors"
	"net/http"
	"strings"
)

// handler is every route of the page. Only the login form (when a token is
// required at all) and the scripts and stylesheets are served without a token.
func (s *server) handler() http.Handler {
	app := http.NewServeMux()
	app.HandleFunc("GET /{$}", s.pages.index)
	app.HandleFunc("GET /graph.json", s.pages.graphJSON)
	app.HandleFunc("GET /graph.dot", s.pages.graphDOT)
	app.HandleFunc("GET /graph.mmd", s.pages.graphMermaid)
	app.HandleFunc("GET /proposals/{namespace}/{name}", s.pages.proposal)
	app.HandleFunc("GET /policies/{namespace}/{name}", s.pages.policy)

	root := http.NewServeMux()
	root.HandleFunc("GET "+staticPrefix+"{hash}/{name}", s.static.serve)
	root.HandleFunc("GET /login", s.loginForm)
	root.HandleFunc("POST /login", s.login)
	root.HandleFunc("POST /logout", s.logout)
	root.Handle("/", s.requireToken(app))
	return secureHeaders(root)
}

// secureHeaders keeps the page to its own scripts and out of frames, and out
// of caches: it shows what a token allowed. The content-hashed static files
// set their own, long, caching.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// requestNamespace is the namespace a request is about, which the token's user
// must be allowed to list policies in: the object pages' path segment, or
// ?namespace= (empty, the whole cluster, when absent).
func requestNamespace(r *http.Request) string {
	for _, prefix := range []string{"/proposals/", "/policies/"} {
		if rest, ok := strings.CutPrefix(r.URL.Path, prefix); ok {
			ns, _, _ := strings.Cut(rest, "/")
			return ns
		}
	}
	return r.URL.Query().Get("namespace")
}

// requireToken serves next only to a request whose token the API server
// accepts and whose user may list policies; a browser asking for a page is
// sent to the login form, anything else gets 401 or 403.
func (s *server) requireToken(next http.Handler) http.Handler {
	if s.auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := requestToken(r)
		err := s.auth.check(r.Context(), token, requestNamespace(r))
		if err == nil {
			next.ServeHTTP(w, r)
			return
		}
		if isTransient(err) {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if token == "" && r.Header.Get("Authorization") == "" && strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther) //nolint:gosec // G710: a path on this server, escaped into the query.
			return
		}
		status := http.StatusForbidden
		if errors.Is(err, errNoToken) || errors.Is(err, errInvalidToken) {
			status = http.StatusUnauthorized
			w.Header().Set("WWW-Authenticate", `Bearer realm="network-enforcer-review"`)
		}
		http.Error(w, err.Error(), status)
	})
}
