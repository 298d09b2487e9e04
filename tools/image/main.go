// Command image builds the distribution's OCI image from static binaries that
// are already built, with no container engine and no registry, and prints its
// digest. `make image` builds the binaries and runs it:
//
//	go run ./tools/image -name network-enforcer:dev -binary linux/amd64=bin/image/linux-amd64/network-enforcer \
//		-layout bin/network-enforcer-image -tarball bin/network-enforcer-image.tar
//
// The image is the same, digest for digest, for the same binaries, -epoch and
// labels: see tools/image/ociimage.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubewarden/network-enforcer/tools/image/ociimage"
)

// binaries collects repeated -binary os/arch=path flags, in order.
type binaries []ociimage.Options

func (b *binaries) String() string { return strconv.Itoa(len(*b)) }

func (b *binaries) Set(s string) error {
	platform, path, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return fmt.Errorf("%q: want os/arch=path", s)
	}
	p, err := ociimage.ParsePlatform(platform)
	if err != nil {
		return err
	}
	*b = append(*b, ociimage.Options{Platform: p, Binary: path})
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	var bins binaries
	flag.Var(&bins, "binary", "os/arch=path of a static distribution binary; repeat for more platforms (the first goes into the tarball)")
	imageName := flag.String("name", "network-enforcer:dev", "the image's name and tag")
	epoch := flag.String("epoch", os.Getenv("SOURCE_DATE_EPOCH"), "the image's created time and its files' times, in seconds since 1970 (default $SOURCE_DATE_EPOCH, else 0)")
	revision := flag.String("revision", "", "the source revision, for the org.opencontainers.image.revision label")
	version := flag.String("version", "", "the distribution's version, for the org.opencontainers.image.version label")
	layoutDir := flag.String("layout", "", "write an OCI image layout into this directory (replacing it)")
	tarballPath := flag.String("tarball", "", "write a `docker load` tarball of the first platform's image to this file")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if len(bins) == 0 {
		return errors.New("no -binary given")
	}
	ref, err := ociimage.Ref(*imageName)
	if err != nil {
		return err
	}
	var secs int64
	if *epoch != "" {
		if secs, err = strconv.ParseInt(*epoch, 10, 64); err != nil {
			return fmt.Errorf("epoch %q: %w", *epoch, err)
		}
	}
	created := time.Unix(secs, 0).UTC()
	labels := map[string]string{
		"org.opencontainers.image.title":       "network-enforcer",
		"org.opencontainers.image.description": "Network Enforcer learns and enforces Kubernetes network policy from the data plane's flow records.",
		"org.opencontainers.image.source":      "https://github.com/kubewarden/network-enforcer",
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	if *revision != "" {
		labels["org.opencontainers.image.revision"] = *revision
	}
	if *version != "" {
		labels["org.opencontainers.image.version"] = *version
	}

	var images []v1.Image
	for _, o := range bins {
		o.Created = created
		o.Labels = labels
		img, err := ociimage.Build(o)
		if err != nil {
			return fmt.Errorf("%s: %w", o.Platform, err)
		}
		images = append(images, img)
	}
	w, err := ociimage.Write(ref, images, *layoutDir, *tarballPath)
	if err != nil {
		return err
	}
	for _, i := range w.Images {
		fmt.Printf("%s %s %s\n", ociimage.FullName(ref), i.Platform, i.Digest)
	}
	if len(w.Images) > 1 {
		fmt.Printf("%s index %s\n", ociimage.FullName(ref), w.Digest)
	}
	if *layoutDir != "" {
		fmt.Printf("OCI image layout: %s\n", *layoutDir)
	}
	if *tarballPath != "" {
		fmt.Printf("docker load / ctr images import tarball (%s): %s\n", w.Images[0].Platform, *tarballPath)
	}
	return nil
}
