// Package ociimage builds the distribution's OCI image without a container
// engine or a registry: FROM scratch, one layer with the static binary, the CA
// roots and the nonroot user, and the configuration that the root Dockerfile's
// final stage gives its image. The same inputs give the same digest: every file
// in the layer has a fixed time and owner, the entries are sorted and the
// image's created time is the one given.
//
// tools/image, which `make image` runs, writes it as an OCI image layout and as a
// `docker load` tarball; the tests in test/image build it from the built
// distribution and compare it with the Dockerfile.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// What the image holds and how it runs: the root Dockerfile's final stage says
// the same (test/image holds the two together).
const (
	// BinaryPath is the distribution in the image.
	BinaryPath = "/network-enforcer"
	// CABundlePath is where Go's crypto/x509 (and most else) looks for the
	// system's CA roots on Linux.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// UID and GID of the nonroot user, as distroless's nonroot.
	UID = 65532
	GID = 65532
	// DefaultConfig is the configuration file that the image's command names,
	// where the chart mounts it.
	DefaultConfig = "/etc/network-enforcer/config/config.yaml"
)

// ExposedPorts are the image's ports: 4317/4318 OTLP (ztunnel records, or events at the default
// collector); 4320 the leader receiver (scale-out); 8888 the collector's metrics; 9464
// network_enforcer_policy_denies; 13133 health_check.
var ExposedPorts = []string{"4317/tcp", "4318/tcp", "4320/tcp", "8888/tcp", "9464/tcp", "13133/tcp"}

// The users and groups of the image, as distroless's: root for the node agent,
// which reads the node's logs; nonroot for every other pod; nobody. There is no
// shell to log in to.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
)

// Platform is an image's OS and architecture.
type Platform struct {
	OS, Architecture string
}

func (p Platform) String() string { return p.OS + "/" + p.Architecture }

// ParsePlatform parses "linux/amd64".
func ParsePlatform(s string) (Platform, error) {
	os, arch, ok := strings.Cut(s, "/")
	if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q: want os/arch, as linux/amd64", s)
	}
	return Platform{OS: os, Architecture: arch}, nil
}

// Options are the inputs of one image.
type Options struct {
	// Binary is the static distribution for Platform.
	Binary   string
	Platform Platform
	// Created is the image's created time and every file's modification time:
	// the commit's time, or a fixed epoch.
	Created time.Time
	// Labels go into the image's configuration as they are.
	Labels map[string]string
}

// Build builds the image.
func Build(o Options) (v1.Image, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, err
	}
	ca, err := CABundle()
	if err != nil {
		return nil, err
	}
	created := o.Created.UTC()
	layerTar, err := Layer([]File{
		{Path: BinaryPath, Mode: 0o755, Data: bin},
		{Path: CABundlePath, Mode: 0o644, Data: ca},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
		// The nonroot user's home, as distroless has it.
		{Path: "/home/nonroot", Mode: 0o700, Dir: true, UID: UID, GID: GID},
	}, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "tools/image: " + BinaryPath + ", CA roots, /etc/passwd, /etc/group",
		},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = o.Platform.OS
	cfg.Architecture = o.Platform.Architecture
	cfg.Created = v1.Time{Time: created}
	ports := map[string]struct{}{}
	for _, p := range ExposedPorts {
		ports[p] = struct{}{}
	}
	cfg.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint:   []string{BinaryPath},
		Cmd:          []string{"--config=" + DefaultConfig},
		ExposedPorts: ports,
		Labels:       o.Labels,
	}
	return mutate.ConfigFile(img, cfg)
}

// CABundle returns the CA roots as PEM: the Mozilla NSS trust store as the Go
// module golang.org/x/crypto/x509roots/fallback holds it, at the version that
// go.mod pins, so that the image does not depend on the build machine. A root
// that NSS trusts only for certificates issued before a date is left out: a
// PEM file cannot say so.
func CABundle() ([]byte, error) {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if b.Len() == 0 {
		return nil, errors.New("no CA roots in the fallback bundle")
	}
	return b.Bytes(), nil
}

// File is one entry of a layer.
type File struct {
	// Path is absolute.
	Path     string
	Mode     int64
	Dir      bool
	Data     []byte
	UID, GID int
}

// Layer returns an uncompressed layer tar that holds files and their parent
// directories (0755, root), sorted by path, each with modification time mtime.
func Layer(files []File, mtime time.Time) ([]byte, error) {
	entries := map[string]File{}
	for _, f := range files {
		p := strings.Trim(f.Path, "/")
		if p == "" {
			return nil, fmt.Errorf("file %q: no path", f.Path)
		}
		if _, dup := entries[p]; dup {
			return nil, fmt.Errorf("file %q twice", f.Path)
		}
		f.Path = p
		entries[p] = f
		for dir := parent(p); dir != ""; dir = parent(dir) {
			if _, ok := entries[dir]; !ok {
				entries[dir] = File{Path: dir, Mode: 0o755, Dir: true}
			}
		}
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, p := range paths {
		f := entries[p]
		h := &tar.Header{
			Name:    p,
			Mode:    f.Mode,
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: mtime,
			Format:  tar.FormatUSTAR,
		}
		if f.Dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func parent(p string) string {
	i := strings.LastIndex(p, "/")
	if i < 0 {
		return ""
	}
	return p[:i]
}
