// Command crddocs rewrites the descriptions in the CRD YAML that controller-gen
// writes so that each paragraph is one line. controller-gen keeps the line
// breaks of the Go doc comments, which wrap at 80 columns, and `kubectl explain`
// prints them as they are: mid-sentence. Paragraphs, list items and indented
// lines keep their own lines. `make generate` runs it on chart/crds/.
package main

import (
	"bytes"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/kubewarden/network-enforcer/tools/crddocs/unwrap"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crddocs CRD.yaml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := rewrite(path); err != nil {
			fmt.Fprintf(os.Stderr, "crddocs: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func rewrite(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(in, &doc); err != nil {
		return err
	}
	walk(&doc)
	var out bytes.Buffer
	out.WriteString("---\n")
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// walk unwraps the value of every "description" key under n.
func walk(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "description" && v.Kind == yaml.ScalarNode {
				v.Value = unwrap.Description(v.Value)
				v.Style = 0 // the encoder quotes or blocks it as it needs
				if bytes.ContainsRune([]byte(v.Value), '\n') {
					v.Style = yaml.LiteralStyle
				}
			}
		}
	}
	for _, c := range n.Content {
		walk(c)
	}
}
