// Command modalign fails when a go.mod of a build module requires a module that
// the distribution's go.mod also requires at a lower version.
//
// A package compiled in two module graphs is compiled twice unless every module
// in its dependency closure is at the same version in both. The modules that
// build the control plane, the real node's parts and the tools
// (tools/controlplane, tools/cluster/containerd, tools/cluster/coredns,
// tools/pins, tools/certmanager) share Kubernetes' client libraries, gRPC, protobuf and
// OpenTelemetry with the distribution; at the distribution's versions a cold
// build compiles those packages once.
//
// Usage: go run ./tools/modalign go.mod tools/controlplane/go.mod ...
package main

import (
	"fmt"
	"os"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: modalign REFERENCE_GO_MOD GO_MOD...")
		os.Exit(2)
	}
	ref, err := requires(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	failed := false
	for _, path := range os.Args[2:] {
		mods, err := requires(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for mod, v := range mods {
			if want, ok := ref[mod]; ok && semver.Compare(v, want) < 0 {
				fmt.Printf("%s: %s %s is below %s's %s; raise it (go get %s@%s) so that its packages compile once\n", path, mod, v, os.Args[1], want, mod, want)
				failed = true
			}
		}
	}
	if failed {
		os.Exit(1)
	}
}

// requires reads the versions that a go.mod requires, after its replacements
// by another version of the same module; a module replaced by another module
// or a folder is left out, as its packages are not the required ones.
func requires(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		return nil, err
	}
	mods := map[string]string{}
	for _, r := range f.Require {
		mods[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if r.New.Path != r.Old.Path || r.New.Version == "" {
			delete(mods, r.Old.Path)
			continue
		}
		mods[r.Old.Path] = r.New.Version
	}
	return mods, nil
}
