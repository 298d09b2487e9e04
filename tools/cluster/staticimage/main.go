// Command staticimage builds a one-layer image FROM scratch around one static
// binary and writes it as a docker tarball that `ctr images import` reads, for
// the parts of the real-node cluster that no registry can serve here (the pause
// image, CoreDNS, hubble-relay, the tests' own pods):
//
//	go run ./tools/cluster/staticimage -name ne.local/coredns:v1.15.0 -binary .../coredns -tarball coredns.tar
//
// The binary goes to /<its name>, the entrypoint; the image's CA roots are the
// ones the distribution's image carries.
package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kubewarden/network-enforcer/tools/image/ociimage"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "staticimage:", err)
		os.Exit(1)
	}
}

func run() error {
	imageName := flag.String("name", "", "the image's name and tag")
	binary := flag.String("binary", "", "the static binary, the image's entrypoint")
	out := flag.String("tarball", "", "the docker tarball to write")
	flag.Parse()
	if *imageName == "" || *binary == "" || *out == "" {
		return errors.New("-name, -binary and -tarball are required")
	}
	ref, err := name.NewTag(*imageName)
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		return err
	}
	ca, err := ociimage.CABundle()
	if err != nil {
		return err
	}
	entry := "/" + filepath.Base(*binary)
	layerTar, err := ociimage.Layer([]ociimage.File{
		{Path: entry, Mode: 0o755, Data: bin},
		{Path: ociimage.CABundlePath, Mode: 0o644, Data: ca},
		{Path: "/tmp", Mode: 0o1777, Dir: true},
	}, time.Unix(0, 0))
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config = v1.Config{Entrypoint: []string{entry}}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return tarball.WriteToFile(*out, ref, img)
}
