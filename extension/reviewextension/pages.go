package reviewextension

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/render"
)

//go:embed web
var webFiles embed.FS

// reader is the part of the enforcer extension that the page reads: the
// shared cache, on every replica.
type reader interface {
	enforcerextension.Lister
	Proposal(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicyProposal, bool)
	Policy(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicy, bool)
}

// pages draws the page's views from the cache. It writes nothing: every
// change is a kubectl command that the views print.
type pages struct {
	cache reader
	// renderer renders a proposal's native objects (the policy controller
	// extension).
	renderer policycontrollerextension.Renderer
	refresh  time.Duration
	tmpl     map[string]*template.Template
}

// newPages parses the views; tokenRequired says whether they offer to log out,
// audience which tokens the login form asks for, static where the scripts
// and stylesheets are.
func newPages(cache reader, renderer policycontrollerextension.Renderer, refresh time.Duration, tokenRequired bool, audience string, static *staticFiles) (*pages, error) {
	p := &pages{cache: cache, renderer: renderer, refresh: refresh, tmpl: map[string]*template.Template{}}
	fm := template.FuncMap{
		"tokenRequired": func() bool { return tokenRequired },
		"audience":      func() string { return audience },
		"static":        static.url,
		"palette":       newPaletteJSON,
	}
	for k, f := range funcs {
		fm[k] = f
	}
	for _, name := range []string{"index.html", "proposal.html", "policy.html", "login.html"} {
		t, err := template.New(name).Funcs(fm).ParseFS(webFiles, "web/layout.html", "web/object.html", "web/"+name)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		p.tmpl[name] = t
	}
	return p, nil
}

var funcs = template.FuncMap{
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return time.Since(t).Round(time.Second).String() + " ago"
	},
	"rfc3339": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
	"peer":     v1alpha1.ObservedPeer.String,
	"endpoint": endpointText,
	// about marks a count that is an estimate.
	"about": func(estimated bool) template.HTML {
		if !estimated {
			return ""
		}
		return `<abbr class="estimate" title="an estimate: the tracking limit was reached, or edges are not listed; see the EvidenceComplete condition">about</abbr> `
	},
	"ready":         readyOf,
	"amendedPolicy": func(o v1alpha1.WorkloadNetworkPolicyProposal) string { return render.AmendedPolicyName(&o) },
	"learnedEdges":  learnedRevisionEdges,
	"revision":      render.RevisionText,
	"join":          strings.Join,
	"standardError": func() string { return strconv.FormatFloat(100*observed.StandardError, 'g', 3, 64) },
}

// respond writes template name with data, whole or not at all: a template
// error is a 500, not half a page.
func (p *pages) respond(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := p.tmpl[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// graph builds the graph of namespace's objects ("" for all).
func (p *pages) graph(namespace string) (Graph, error) {
	proposals, err := p.cache.ListProposals(namespace)
	if err != nil {
		return Graph{}, err
	}
	policies, err := p.cache.ListPolicies(namespace)
	if err != nil {
		return Graph{}, err
	}
	return buildGraph(namespace, proposals, policies), nil
}

func (p *pages) graphJSON(w http.ResponseWriter, r *http.Request) {
	g, err := p.graph(r.URL.Query().Get("namespace"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(g)
}

func (p *pages) graphDOT(w http.ResponseWriter, r *http.Request) {
	p.graphText(w, r, "text/vnd.graphviz; charset=utf-8", writeDOT)
}

func (p *pages) graphMermaid(w http.ResponseWriter, r *http.Request) {
	p.graphText(w, r, "text/plain; charset=utf-8", writeMermaid)
}

func (p *pages) graphText(w http.ResponseWriter, r *http.Request, contentType string, write func(io.Writer, Graph) error) {
	g, err := p.graph(r.URL.Query().Get("namespace"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := write(&buf, g); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write(buf.Bytes())
}

// indexData is the graph page: the graph itself comes from graph.json.
type indexData struct {
	Namespace  string
	Namespaces []string
	RefreshMS  int64
	Proposals  []v1alpha1.WorkloadNetworkPolicyProposal
	Policies   []v1alpha1.WorkloadNetworkPolicy
	// Amendments are the names of each policy's amendments, by the
	// policy's namespace/name.
	Amendments map[string][]string
}

func (p *pages) index(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("namespace")
	proposals, err := p.cache.ListProposals(ns)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	policies, err := p.cache.ListPolicies(ns)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	d := indexData{Namespace: ns, RefreshMS: p.refresh.Milliseconds(), Proposals: proposals, Policies: policies, Amendments: map[string][]string{}}
	seen := map[string]bool{}
	for i, o := range proposals {
		seen[o.Namespace] = true
		if name := render.AmendedPolicyName(&proposals[i]); name != "" {
			d.Amendments[o.Namespace+"/"+name] = append(d.Amendments[o.Namespace+"/"+name], o.Name)
		}
	}
	for _, o := range policies {
		seen[o.Namespace] = true
	}
	for n := range seen {
		d.Namespaces = append(d.Namespaces, n)
	}
	slices.Sort(d.Namespaces)
	p.respond(w, http.StatusOK, "index.html", d)
}
