// Package thirdparty embeds the browser libraries that the review page serves,
// as npm published them: each folder holds the file, its LICENSE and a
// VERSION note, refreshed by `make third-party`.
package thirdparty

import "embed"

// Files holds cytoscape/cytoscape.min.js and
// cytoscape-dagre/cytoscape-dagre.min.js (which bundles dagre), and their
// licenses.
//
//go:embed cytoscape/cytoscape.min.js cytoscape/LICENSE cytoscape-dagre/cytoscape-dagre.min.js cytoscape-dagre/LICENSE
var Files embed.FS
