package metadatatest

import (
	"os"
	"strings"
)

// readme is what a component's README.md says of its metadata: the status
// table at its top and the table of its own metrics.
type readme struct {
	// typ is the status table's Type cell; stability its Stability cells, one
	// row a level.
	typ       string
	stability []string
	// metrics are the rows of the table under "## Telemetry", by metric.
	metrics map[string]readmeMetric
	// header is the telemetry table's header, empty when there is none.
	header []string
}

// readmeMetric is one row of the telemetry table.
type readmeMetric struct {
	kind, unit, description string
}

// Columns of the telemetry table that the check reads; others (attributes,
// say) are the reader's.
const (
	colMetric      = "Metric"
	colKind        = "Kind"
	colUnit        = "Unit"
	colDescription = "Description"
)

func readReadme(path string) (*readme, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &readme{metrics: map[string]readmeMetric{}}
	lines := strings.Split(string(b), "\n")
	r.readStatus(lines)
	r.readTelemetry(lines)
	return r, nil
}

// cells splits a table row into its trimmed cells, or returns nil for a line
// that is not a row.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	out := strings.Split(line[1:len(line)-1], "|")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// readStatus reads the first table: its Type row, and its Stability row with
// the rows after it whose first cell is empty (mdatagen writes a level a row).
func (r *readme) readStatus(lines []string) {
	inTable, inStability := false, false
	for _, l := range lines {
		c := cells(l)
		if c == nil {
			if inTable {
				return
			}
			continue
		}
		inTable = true
		if len(c) < 2 {
			continue
		}
		switch {
		case c[0] == "Stability":
			inStability = true
			r.stability = append(r.stability, c[1])
		case c[0] == "" && inStability:
			r.stability = append(r.stability, c[1])
		default:
			inStability = false
			if c[0] == "Type" {
				r.typ = c[1]
			}
		}
	}
}

// readTelemetry reads the table of the "## Telemetry" section whose first
// column is Metric.
func (r *readme) readTelemetry(lines []string) {
	section := false
	var col map[string]int
	for _, l := range lines {
		if strings.HasPrefix(l, "## ") {
			section = strings.TrimSpace(strings.TrimPrefix(l, "## ")) == "Telemetry"
			col = nil
			continue
		}
		c := cells(l)
		if !section || c == nil {
			col = nil
			continue
		}
		switch {
		case col == nil && c[0] == colMetric:
			col = map[string]int{}
			for i, h := range c {
				col[h] = i
			}
			r.header = c
		case col == nil || strings.Trim(c[0], "-: ") == "":
			// not the telemetry table, or its separator row
		default:
			cell := func(name string) string {
				if i, ok := col[name]; ok && i < len(c) {
					return strings.Trim(c[i], "`")
				}
				return ""
			}
			r.metrics[cell(colMetric)] = readmeMetric{kind: cell(colKind), unit: cell(colUnit), description: cell(colDescription)}
		}
	}
}
