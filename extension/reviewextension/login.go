package reviewextension

import (
	"net/http"
	"net/url"
	"strings"
)

// loginForm asks for a token: `kubectl create token <service account>`.
func (s *server) loginForm(w http.ResponseWriter, r *http.Request) {
	if s.auth == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.pages.respond(w, http.StatusOK, "login.html", loginData{Next: safeNext(r.URL.Query().Get("next"))})
}

type loginData struct {
	Next  string
	Error string
}

// login checks the form's token as a request would be checked, and keeps it
// in a cookie that scripts cannot read and other sites cannot send.
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if s.auth == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	u, _ := url.Parse(next)
	if err := s.auth.check(r.Context(), token, u.Query().Get("namespace")); err != nil {
		status := http.StatusUnauthorized
		if isTransient(err) {
			status = http.StatusServiceUnavailable
		}
		s.pages.respond(w, status, "login.html", loginData{Next: next, Error: err.Error()})
		return
	}
	//nolint:gosec // G124: Secure whenever the page is served over TLS; over plain HTTP (loopback) a Secure cookie would never come back.
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // G710: safeNext keeps next on this server.
}

// logout forgets the cookie.
func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	//nolint:gosec // G124: as in login, Secure whenever the page is served over TLS.
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect on this server: a path, never another host.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
