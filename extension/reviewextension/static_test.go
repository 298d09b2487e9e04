package reviewextension

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	thirdparty "github.com/kubewarden/network-enforcer/third_party"
)

// staticURL finds the pages' references to the scripts and stylesheets.
var staticURL = regexp.MustCompile(`(?:src|href)="(/static/([0-9a-f]+)/([a-z.-]+))"`)

// TestStaticFiles: the pages reference their scripts and stylesheets (the
// vendored libraries among them) at URLs that carry a hash of the content,
// which anyone may fetch without a token and a browser may cache for a year;
// the pages themselves still need a token and are never cached.
func TestStaticFiles(t *testing.T) {
	controlplanetest.Require(t)
	_, h := startEnforcer(t, "review-static")
	base := startReview(t, h, AuthModeToken)
	token := serviceAccountToken(t, "review-reader", "", listPolicies)

	code, page, hdr := request(t, http.DefaultClient, base+"/?namespace=shop", token, "text/html")
	if code != http.StatusOK || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /: %d, Cache-Control %q, want 200 no-store", code, hdr.Get("Cache-Control"))
	}
	_, login, _ := request(t, http.DefaultClient, base+"/login", "", "text/html")
	urls := map[string]string{} // name -> URL
	for _, m := range staticURL.FindAllStringSubmatch(page+login, -1) {
		urls[m[3]] = m[1]
	}
	vendored := map[string]string{"cytoscape.min.js": "cytoscape/cytoscape.min.js", "cytoscape-dagre.min.js": "cytoscape-dagre/cytoscape-dagre.min.js"}
	for _, name := range []string{"cytoscape.min.js", "cytoscape-dagre.min.js", "review.js", "review.css", "palette.css"} {
		u, ok := urls[name]
		if !ok {
			t.Errorf("the pages do not reference %s at a hashed URL: %v", name, urls)
			continue
		}
		// No token, no cookie.
		code, body, hdr := request(t, http.DefaultClient, base+u, "", "")
		if code != http.StatusOK {
			t.Errorf("GET %s without a token: %d %q", u, code, body)
			continue
		}
		if got := hdr.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: Cache-Control %q", u, got)
		}
		wantType := map[bool]string{true: "text/css; charset=utf-8", false: "text/javascript; charset=utf-8"}[strings.HasSuffix(name, ".css")]
		if got := hdr.Get("Content-Type"); got != wantType {
			t.Errorf("GET %s: Content-Type %q, want %q", u, got, wantType)
		}
		sum := sha256.Sum256([]byte(body))
		if hash := staticURL.FindStringSubmatch(`src="` + u + `"`)[2]; !strings.HasPrefix(hex.EncodeToString(sum[:]), hash) || len(hash) < 16 {
			t.Errorf("%s: the URL's hash %s is not that of the content served", u, hash)
		}
		if lib, ok := vendored[name]; ok {
			want, err := fs.ReadFile(thirdparty.Files, lib)
			if err != nil {
				t.Fatal(err)
			}
			if body != string(want) {
				t.Errorf("%s is not the vendored %s", u, lib)
			}
		}
		// A browser that has it asks again at most with its ETag.
		req, _ := http.NewRequest(http.MethodGet, base+u, http.NoBody)
		req.Header.Set("If-None-Match", hdr.Get("ETag"))
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %v %v, want 304", u, resp, err)
		} else {
			resp.Body.Close()
		}
	}
	// Another content's hash, or no hash, is not served.
	for _, path := range []string{"/static/0000000000000000/cytoscape.min.js", "/static/cytoscape.min.js", "/static/review.js"} {
		if code, _, hdr := request(t, http.DefaultClient, base+path, token, ""); code != http.StatusNotFound || hdr.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: %d, Cache-Control %q, want 404 no-store", path, code, hdr.Get("Cache-Control"))
		}
	}
	if code, _, _ := request(t, http.DefaultClient, base+"/third_party/cytoscape/cytoscape.min.js", token, ""); code != http.StatusNotFound {
		t.Errorf("the former unhashed library URL: %d, want 404", code)
	}
}
