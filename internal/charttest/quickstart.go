package charttest

import (
	"errors"
	"strings"
)

// QuickstartInstalls returns the `helm install` commands of the "Quickstart on
// a cluster" section of a README, each as its words, with the lines that a
// backslash continues joined. The chart's tests run exactly these words, so
// that the README cannot drift from what is tested.
func QuickstartInstalls(readme string) ([][]string, error) {
	_, section, ok := strings.Cut(readme, "\n## Quickstart on a cluster\n")
	if !ok {
		return nil, errors.New(`the README has no "## Quickstart on a cluster" section`)
	}
	// To the next heading: "## " or "### " (in code, "# " starts a comment).
	section, _, _ = strings.Cut(section, "\n## ")
	section, _, _ = strings.Cut(section, "\n### ")
	var cmds [][]string
	inCode := false
	line := ""
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
			continue
		}
		if !inCode || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			line += cont + " "
			continue
		}
		line += l
		if words := strings.Fields(line); len(words) > 2 && words[0] == "helm" && words[1] == "install" {
			cmds = append(cmds, words)
		}
		line = ""
	}
	if len(cmds) == 0 {
		return nil, errors.New(`the README's "Quickstart on a cluster" has no helm install`)
	}
	return cmds, nil
}

// ProviderOf returns the provider that a helm command's words install: the
// value of controller.provider.name, or the chart's default, istio.
func ProviderOf(words []string) string {
	provider := "istio"
	for _, w := range words {
		if p, ok := strings.CutPrefix(w, "controller.provider.name="); ok {
			provider = p
		}
	}
	return provider
}
