package dataplanetest

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"
)

// ZtunnelFixture is a ztunnel JSON log, relative to the repository root: access
// lines, policy decisions, and lines a receiver must drop.
const ZtunnelFixture = "testdata/ztunnel/ztunnel.jsonl"

// LoadZtunnel reads a ztunnel log, one line each.
func LoadZtunnel(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}

// CRI writes lines as the kubelet's container runtime does in a container log
// file: "<time> stdout <P|F> <text>", each line newline-terminated. A line longer
// than split bytes is written as partial (P) parts and a final (F) one, as
// runtimes do for long lines; split <= 0 never splits.
func CRI(lines []string, at time.Time, split int) string {
	var b strings.Builder
	for i, l := range lines {
		ts := at.Add(time.Duration(i) * time.Millisecond).UTC().Format(time.RFC3339Nano)
		for split > 0 && len(l) > split {
			fmt.Fprintf(&b, "%s stdout P %s\n", ts, l[:split])
			l = l[split:]
		}
		fmt.Fprintf(&b, "%s stdout F %s\n", ts, l)
	}
	return b.String()
}
