package ociimage

import (
	"errors"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The annotations that name an image in an OCI layout: the OCI one holds the
// tag, containerd's the whole name, which `ctr images import` takes.
const (
	refNameAnnotation    = "org.opencontainers.image.ref.name"
	containerdAnnotation = "io.containerd.image.name"
)

// Ref parses an image name, as network-enforcer:dev; a name without a tag gets
// "latest".
func Ref(s string) (name.Tag, error) {
	return name.NewTag(s)
}

// FullName is ref as containerd and the kubelet name it: with its registry
// (docker.io when it has none) and tag.
func FullName(ref name.Tag) string {
	registry := ref.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	return registry + "/" + ref.RepositoryStr() + ":" + ref.TagStr()
}

// Written is what Write wrote.
type Written struct {
	// Digest is what the layout's index.json names: the image, or with more
	// than one platform, the image index.
	Digest v1.Hash
	// Images are the digests of the images, by platform, in the order given.
	Images []PlatformDigest
}

// PlatformDigest is one platform's image digest.
type PlatformDigest struct {
	Platform Platform
	Digest   v1.Hash
}

// Write writes images (one per platform, the first being the tarball's) under
// ref: as an OCI image layout in the directory layoutDir, replacing what is
// there, and as a `docker load` tarball at tarballPath. Either may be "".
func Write(ref name.Tag, images []v1.Image, layoutDir, tarballPath string) (Written, error) {
	var w Written
	if len(images) == 0 {
		return w, errors.New("no image to write")
	}
	var top mutate.Appendable
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range images {
		cfg, err := img.ConfigFile()
		if err != nil {
			return w, err
		}
		d, err := img.Digest()
		if err != nil {
			return w, err
		}
		p := Platform{OS: cfg.OS, Architecture: cfg.Architecture}
		w.Images = append(w.Images, PlatformDigest{Platform: p, Digest: d})
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Architecture}},
		})
	}
	var desc v1.Descriptor
	if len(images) == 1 {
		top = images[0]
		w.Digest = w.Images[0].Digest
		desc.Platform = &v1.Platform{OS: w.Images[0].Platform.OS, Architecture: w.Images[0].Platform.Architecture}
	} else {
		top = index
		d, err := index.Digest()
		if err != nil {
			return w, err
		}
		w.Digest = d
	}

	if layoutDir != "" {
		if err := os.RemoveAll(layoutDir); err != nil {
			return w, err
		}
		lp, err := layout.Write(layoutDir, empty.Index)
		if err != nil {
			return w, err
		}
		opts := []layout.Option{layout.WithAnnotations(map[string]string{
			refNameAnnotation:    ref.TagStr(),
			containerdAnnotation: FullName(ref),
		})}
		if desc.Platform != nil {
			opts = append(opts, layout.WithPlatform(*desc.Platform))
		}
		switch t := top.(type) {
		case v1.Image:
			err = lp.AppendImage(t, opts...)
		case v1.ImageIndex:
			err = lp.AppendIndex(t, opts...)
		}
		if err != nil {
			return w, err
		}
	}
	if tarballPath != "" {
		if err := tarball.WriteToFile(tarballPath, ref, images[0]); err != nil {
			return w, err
		}
	}
	return w, nil
}
