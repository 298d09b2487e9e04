package reviewextension

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"time"

	thirdparty "github.com/kubewarden/network-enforcer/third_party"
)

// staticPrefix is where the page's scripts and stylesheets are served, each
// under a hash of its content: /static/<hash>/<name>.
const staticPrefix = "/static/"

// immutable is the caching of a content-hashed file: a new content is a new
// URL, so a browser may keep each one for a year without asking again.
const immutable = "public, max-age=31536000, immutable"

// staticFile is a script or stylesheet of the page.
type staticFile struct {
	name, hash, contentType string
	body                    []byte
}

// staticFiles are the page's scripts and stylesheets by name: the vendored
// libraries, the page's own script and stylesheet, and the palette's
// stylesheet. Nothing in them is about the cluster (the libraries are public,
// the rest is this program's source), so they are served without a token,
// which also lets the login form have its stylesheet.
type staticFiles struct {
	byName map[string]*staticFile
}

func newStaticFiles() (*staticFiles, error) {
	s := &staticFiles{byName: map[string]*staticFile{}}
	for _, f := range []struct {
		fsys fs.FS
		path string
	}{
		{thirdparty.Files, "cytoscape/cytoscape.min.js"},
		{thirdparty.Files, "cytoscape-dagre/cytoscape-dagre.min.js"},
		{webFiles, "web/static/review.js"},
		{webFiles, "web/static/review.css"},
	} {
		body, err := fs.ReadFile(f.fsys, f.path)
		if err != nil {
			return nil, err
		}
		s.add(path.Base(f.path), body)
	}
	s.add("palette.css", paletteCSS())
	return s, nil
}

func (s *staticFiles) add(name string, body []byte) {
	sum := sha256.Sum256(body)
	ct := "text/javascript; charset=utf-8"
	if path.Ext(name) == ".css" {
		ct = "text/css; charset=utf-8"
	}
	s.byName[name] = &staticFile{name: name, hash: hex.EncodeToString(sum[:8]), contentType: ct, body: body}
}

// url is the content-hashed address of a file, for the pages to reference.
func (s *staticFiles) url(name string) (string, error) {
	f, ok := s.byName[name]
	if !ok {
		return "", fmt.Errorf("no static file %q", name)
	}
	return staticPrefix + f.hash + "/" + f.name, nil
}

// serve answers GET /static/{hash}/{name}: the file when the hash is its
// content's, for ever; a hash of another content (a page of an older
// version) is not found, rather than a different content cached under it.
func (s *staticFiles) serve(w http.ResponseWriter, r *http.Request) {
	f, ok := s.byName[r.PathValue("name")]
	if !ok || r.PathValue("hash") != f.hash {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", immutable)
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", `"`+f.hash+`"`)
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.body))
}
