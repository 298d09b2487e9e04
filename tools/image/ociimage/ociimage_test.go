package ociimage

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestLayer: the order of the files does not matter; parent directories are
// added; every entry has the given time and, unless told, owner root.
func TestLayer(t *testing.T) {
	mtime := time.Unix(1700000000, 0)
	a := File{Path: "/b/c/file", Mode: 0o644, Data: []byte("x")}
	b := File{Path: "/a", Mode: 0o755, Data: []byte("y")}
	one, err := Layer([]File{a, b}, mtime)
	if err != nil {
		t.Fatal(err)
	}
	two, err := Layer([]File{b, a}, mtime)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one, two) {
		t.Fatal("the order of the files changes the layer")
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(one))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(mtime) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s: time %s owner %d:%d %q", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname)
		}
	}
	if want := []string{"a", "b/", "b/c/", "b/c/file"}; !slices.Equal(names, want) {
		t.Fatalf("entries %q, want %q", names, want)
	}
	if _, err := Layer([]File{a, a}, mtime); err == nil {
		t.Fatal("a file twice: no error")
	}
}

// TestWriteIndex: with two platforms the layout names an image index of both,
// and the tarball holds the first.
func TestWriteIndex(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("not a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	var images []v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := Build(Options{Binary: bin, Platform: Platform{OS: "linux", Architecture: arch}, Created: time.Unix(0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, img)
	}
	ref, err := Ref("example.org/ne:1")
	if err != nil {
		t.Fatal(err)
	}
	if got := FullName(ref); got != "example.org/ne:1" {
		t.Fatalf("FullName %q", got)
	}
	lp, tb := filepath.Join(dir, "layout"), filepath.Join(dir, "image.tar")
	w, err := Write(ref, images, lp, tb)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Images) != 2 || w.Images[0].Digest == w.Images[1].Digest {
		t.Fatalf("Written %+v: want two images", w)
	}

	top, err := layout.ImageIndexFromPath(lp)
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != w.Digest || m.Manifests[0].MediaType != types.OCIImageIndex ||
		m.Manifests[0].Annotations["io.containerd.image.name"] != "example.org/ne:1" || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "1" {
		t.Fatalf("index.json %+v, want the image index %s named example.org/ne:1", m.Manifests, w.Digest)
	}
	idx, err := top.ImageIndex(w.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for i, d := range im.Manifests {
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		if d.Digest != w.Images[i].Digest {
			t.Errorf("index entry %d: %s, want %s", i, d.Digest, w.Images[i].Digest)
		}
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Fatalf("index's platforms %q, want %q", platforms, want)
	}

	fromTar, err := tarball.ImageFromPath(tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fromTar.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "amd64" {
		t.Fatalf("tarball: %s, want the first platform's image", cfg.Architecture)
	}
}
