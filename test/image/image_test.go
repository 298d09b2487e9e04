// Package image tests the image that `make image` builds (tools/image/ociimage),
// built here from the built distribution, bin/network-enforcer: two builds give
// one digest, the layout and the tarball hold that image, its configuration and
// files are what the root Dockerfile's final stage says, and the binary in it is
// the distribution.
package image

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
	"github.com/kubewarden/network-enforcer/tools/image/ociimage"
)

var created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func options(bin string) ociimage.Options {
	return ociimage.Options{
		Binary:   bin,
		Platform: ociimage.Platform{OS: "linux", Architecture: "amd64"},
		Created:  created,
		Labels:   map[string]string{"org.opencontainers.image.revision": "test"},
	}
}

// built is one image, which the tests share: building it gzips the binary.
var built struct {
	once sync.Once
	img  v1.Image
	err  error
}

func image(t *testing.T) (v1.Image, string) {
	t.Helper()
	bin := controlplanetest.RequireBinary(t)
	built.once.Do(func() { built.img, built.err = ociimage.Build(options(bin)) })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.img, bin
}

func digest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestReproducible: a second build from the same inputs has the same digest, and
// the OCI layout and the tarball that Write writes hold that image.
func TestReproducible(t *testing.T) {
	img, bin := image(t)
	again, err := ociimage.Build(options(bin))
	if err != nil {
		t.Fatal(err)
	}
	want := digest(t, img)
	if got := digest(t, again); got != want {
		t.Fatalf("second build: digest %s, first %s", got, want)
	}

	dir := t.TempDir()
	ref, err := ociimage.Ref("network-enforcer:test")
	if err != nil {
		t.Fatal(err)
	}
	lp, tb := filepath.Join(dir, "layout"), filepath.Join(dir, "image.tar")
	w, err := ociimage.Write(ref, []v1.Image{again}, lp, tb)
	if err != nil {
		t.Fatal(err)
	}
	if w.Digest != want {
		t.Fatalf("Write: digest %s, want %s", w.Digest, want)
	}
	idx, err := layout.ImageIndexFromPath(lp)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != want {
		t.Fatalf("layout's index.json: %+v, want the one image %s", m.Manifests, want)
	}
	if name := m.Manifests[0].Annotations["io.containerd.image.name"]; name != "docker.io/library/network-enforcer:test" {
		t.Fatalf("layout: io.containerd.image.name %q", name)
	}
	// docker load names an image by its configuration's digest (the image ID);
	// the tarball holds no manifest of its own.
	fromTar, err := tarball.ImageFromPath(tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, get := range []func(v1.Image) (v1.Hash, error){
		func(i v1.Image) (v1.Hash, error) { return i.ConfigName() },
		func(i v1.Image) (v1.Hash, error) {
			l, err := i.Layers()
			if err != nil {
				return v1.Hash{}, err
			}
			if len(l) != 1 {
				return v1.Hash{}, fmt.Errorf("%d layers, want 1", len(l))
			}
			return l[0].Digest()
		},
	} {
		got, err := get(fromTar)
		if err != nil {
			t.Fatal(err)
		}
		if w, _ := get(img); got != w {
			t.Fatalf("tarball: %s, the image %s", got, w)
		}
	}
}

// final is what the root Dockerfile's final stage says of the image.
type final struct {
	user, copyDest   string
	entrypoint, cmd  []string
	expose           []string
	copySource, from string
	copies           []string
}

// dockerfile parses the root Dockerfile's final stage: the instructions after
// its last FROM, continuation lines joined and comments left out.
func dockerfile(t *testing.T) final {
	t.Helper()
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var cur string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") || (l == "" && cur == "") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	var f final
	jsonArgs := func(instr, s string) []string {
		var v []string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("Dockerfile %s %s: not the exec (JSON) form: %v", instr, s, err)
		}
		return v
	}
	for _, l := range lines {
		instr, args, _ := strings.Cut(l, " ")
		args = strings.TrimSpace(args)
		switch strings.ToUpper(instr) {
		case "FROM":
			f = final{from: args}
		case "USER":
			f.user = args
		case "ENTRYPOINT":
			f.entrypoint = jsonArgs(instr, args)
		case "CMD":
			f.cmd = jsonArgs(instr, args)
		case "EXPOSE":
			f.expose = append(f.expose, strings.Fields(args)...)
		case "COPY":
			f.copies = append(f.copies, l)
		}
	}
	// The final stage copies the one binary.
	if len(f.copies) == 1 {
		var paths []string
		for _, a := range strings.Fields(f.copies[0])[1:] {
			if !strings.HasPrefix(a, "--") {
				paths = append(paths, a)
			}
		}
		if len(paths) == 2 {
			f.copySource, f.copyDest = paths[0], paths[1]
		}
	}
	if f.copyDest == "" {
		t.Fatalf("Dockerfile's final stage: want one COPY of the binary, have %q", f.copies)
	}
	if f.from == "" || f.user == "" || f.copyDest == "" || f.entrypoint == nil || f.cmd == nil || f.expose == nil {
		t.Fatalf("Dockerfile's final stage: missing an instruction: %+v", f)
	}
	return f
}

// entry is one file of the layer.
type entry struct {
	hdr  *tar.Header
	data []byte
}

// files returns the image's one layer, by path without the leading slash.
func files(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(path.Clean(h.Name), "/")] = entry{h, data}
	}
	return out
}

// TestMatchesDockerfile: the image runs as the Dockerfile's final stage says
// (user, entrypoint, command, ports), holds the binary where that stage copies
// it, and otherwise what distroless static holds that the distribution uses: CA
// roots, /etc/passwd and /etc/group with the nonroot user; no shell.
func TestMatchesDockerfile(t *testing.T) {
	img, _ := image(t)
	df := dockerfile(t)
	if !strings.Contains(df.from, "distroless/static") || !strings.HasSuffix(df.from, ":nonroot") {
		t.Fatalf("Dockerfile's final stage is FROM %s: the image copies distroless static nonroot; look again at what it holds", df.from)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != df.user {
		t.Errorf("User %q, Dockerfile %q", c.User, df.user)
	}
	if !slices.Equal(c.Entrypoint, df.entrypoint) {
		t.Errorf("Entrypoint %q, Dockerfile %q", c.Entrypoint, df.entrypoint)
	}
	if !slices.Equal(c.Cmd, df.cmd) {
		t.Errorf("Cmd %q, Dockerfile %q", c.Cmd, df.cmd)
	}
	var ports, want []string
	for p := range c.ExposedPorts {
		ports = append(ports, p)
	}
	for _, p := range df.expose {
		if !strings.Contains(p, "/") {
			p += "/tcp"
		}
		want = append(want, p)
	}
	sort.Strings(ports)
	sort.Strings(want)
	if !slices.Equal(ports, want) {
		t.Errorf("ExposedPorts %q, Dockerfile %q", ports, want)
	}
	if len(df.entrypoint) == 0 || df.entrypoint[0] != df.copyDest {
		t.Errorf("Dockerfile: ENTRYPOINT %q does not run the COPY destination %s", df.entrypoint, df.copyDest)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(created) {
		t.Errorf("config: %s/%s created %s", cf.OS, cf.Architecture, cf.Created.Time)
	}

	fs := files(t, img)
	var names []string
	for p, e := range fs {
		names = append(names, p)
		if !e.hdr.ModTime.Equal(created) {
			t.Errorf("%s: time %s, want the image's created time %s", p, e.hdr.ModTime, created)
		}
		if base := path.Base(p); slices.Contains([]string{"sh", "bash", "dash", "ash", "zsh", "busybox"}, base) {
			t.Errorf("%s: a shell in the image", p)
		}
	}
	sort.Strings(names)
	wantNames := []string{"etc", "etc/group", "etc/passwd", "etc/ssl", "etc/ssl/certs", "etc/ssl/certs/ca-certificates.crt",
		"home", "home/nonroot", strings.TrimPrefix(df.copyDest, "/")}
	sort.Strings(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("layer holds %q, want %q", names, wantNames)
	}

	bin, ok := fs[strings.TrimPrefix(df.copyDest, "/")]
	switch {
	case !ok:
		t.Errorf("no %s in the layer", df.copyDest)
	case bin.hdr.Typeflag != tar.TypeReg || bin.hdr.Mode&0o111 != 0o111 || bin.hdr.Uid != 0:
		t.Errorf("%s: type %c mode %o owner %d, want a regular file that anyone may run, root's", df.copyDest, bin.hdr.Typeflag, bin.hdr.Mode, bin.hdr.Uid)
	}
	pool := x509.NewCertPool()
	if ca := fs["etc/ssl/certs/ca-certificates.crt"]; !pool.AppendCertsFromPEM(ca.data) || bytes.Count(ca.data, []byte("BEGIN CERTIFICATE")) < 100 {
		t.Errorf("CA bundle: %d bytes, not a bundle of the public roots", len(ca.data))
	}
	if !strings.Contains(string(fs["etc/passwd"].data), "nonroot:x:"+df.user+":") {
		t.Errorf("/etc/passwd has no nonroot user %s:\n%s", df.user, fs["etc/passwd"].data)
	}
	if !strings.Contains(string(fs["etc/group"].data), "nonroot:x:"+strings.Split(df.user, ":")[1]+":") {
		t.Errorf("/etc/group has no nonroot group:\n%s", fs["etc/group"].data)
	}
	if h := fs["home/nonroot"].hdr; h == nil || h.Uid != ociimage.UID || h.Gid != ociimage.GID {
		t.Errorf("/home/nonroot is not the nonroot user's")
	}
}

// TestBinaryIsDistribution: the binary in the image, run, lists our components.
func TestBinaryIsDistribution(t *testing.T) {
	img, src := image(t)
	bin := files(t, img)[strings.TrimPrefix(ociimage.BinaryPath, "/")]
	if bin.hdr == nil {
		t.Fatalf("no %s in the layer", ociimage.BinaryPath)
	}
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bin.data, orig) {
		t.Fatalf("%s in the image is not %s", ociimage.BinaryPath, src)
	}
	exe := filepath.Join(t.TempDir(), "network-enforcer")
	if err := os.WriteFile(exe, bin.data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := testproc.Command(exe, "components").CombinedOutput()
	if err != nil {
		t.Fatalf("%s components: %v\n%s", ociimage.BinaryPath, err, out)
	}
	for _, c := range []string{"name: hubble", "name: goldmane", "name: ztunnel", "name: learning", "name: violation",
		"name: k8swriter", "name: policy_denies", "name: enforcer", "name: review", "scheme: secret"} {
		if !strings.Contains(string(out), c) {
			t.Errorf("components does not list %s:\n%s", c, out)
		}
	}
}
