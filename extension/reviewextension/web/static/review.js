// The review page's graph: Cytoscape.js draws graph.json, laid out in layers
// by dagre, and polls it again every refresh interval. Everything the page
// shows comes from the server; this script only draws it.
(function () {
  "use strict";
  var box = document.getElementById("graph");
  if (!box) { return; }
  var status = document.getElementById("graph-status");
  var url = box.dataset.url;
  var refresh = parseInt(box.dataset.refreshMs, 10) || 5000;
  // dagre lays a graph out in layers, which reads well, but it grows worse
  // than linearly; above this many nodes a grid keeps the page responsive.
  var layeredLimit = 1500;
  if (window.cytoscapeDagre) { cytoscape.use(window.cytoscapeDagre); }

  // The palette is the server's (the same as DOT's, Mermaid's and the
  // stylesheet's): each state's colour, line and weight, weakest first.
  var palette = JSON.parse(document.getElementById("palette").textContent);
  var states = palette.states, styles = palette.styles;

  var edgeStyles = [];
  // The edge as a whole: the line and weight of the stronger end's state.
  states.forEach(function (s) {
    var st = styles[s];
    edgeStyles.push({ selector: "edge[state = '" + s + "']", style: {
      "line-color": st.color, "target-arrow-color": st.color, "color": st.text, "line-style": st.line,
      "width": st.bold ? 3 : 2 } });
  });
  // Each end its own colour, where the two ends differ: the source's half
  // shows its egress side, the destination's half (and the arrow) its
  // ingress side.
  states.forEach(function (e) {
    states.forEach(function (i) {
      if (e === i) { return; }
      edgeStyles.push({ selector: "edge[egress = '" + e + "'][ingress = '" + i + "']", style: {
        "line-fill": "linear-gradient",
        "line-gradient-stop-colors": [styles[e].color, styles[e].color, styles[i].color, styles[i].color],
        "line-gradient-stop-positions": [0, 45, 55, 100],
        "target-arrow-color": styles[i].color } });
    });
  });

  var cy = cytoscape({
    container: box,
    wheelSensitivity: 0.3,
    style: [
      { selector: "node", style: {
        "label": "data(label)", "font-size": 10, "text-valign": "center", "text-halign": "center",
        "shape": "round-rectangle", "width": "label", "height": 22, "padding": "6px",
        "background-color": "#f3f4f6", "border-width": 1, "border-color": "#9ca3af" } },
      { selector: "node[class != 'Workload']", style: { "shape": "ellipse", "background-color": "#fef3c7" } },
      { selector: "node[class = 'Rule']", style: { "shape": "tag", "background-color": "#fef9c3" } },
      { selector: "node[?objects]", style: { "border-width": 2, "border-color": "#111827" } },
      { selector: ":parent", style: {
        "label": "data(label)", "text-valign": "top", "text-halign": "center", "font-size": 12,
        "background-color": "#eef2ff", "background-opacity": 0.5, "border-color": "#6366f1", "shape": "round-rectangle" } },
      { selector: "edge", style: {
        "curve-style": "bezier", "target-arrow-shape": "triangle", "width": 2, "arrow-scale": 0.8,
        "label": "data(label)", "font-size": 8, "text-rotation": "autorotate", "text-background-color": "#fff",
        "text-background-opacity": 0.8 } }
    ].concat(edgeStyles)
  });
  window.reviewGraph = cy;

  // edgeData is what the graph keeps of an edge: its label (protocol and
  // port), and the state of each end ("" for an end that no object lists).
  function edgeData(e) {
    var label = e.state === "unused" ? "unused" : (e.protocol ? e.protocol + "/" + e.port : e.state);
    return { id: e.id, source: e.source, target: e.target, state: e.state, label: label, object: e.object,
      egress: e.egress ? e.egress.state : "", ingress: e.ingress ? e.ingress.state : "" };
  }

  function elements(g) {
    var els = [], groups = {};
    g.nodes.forEach(function (n) {
      var parent = n.namespace ? "ns:" + n.namespace : "outside";
      if (!groups[parent]) {
        groups[parent] = true;
        els.push({ group: "nodes", data: { id: parent, label: n.namespace ? "namespace " + n.namespace : "outside the workloads", class: "Group" } });
      }
      els.push({ group: "nodes", data: { id: n.id, label: n.label, class: n.class, parent: parent,
        objects: n.objects && n.objects.length ? n.objects : undefined } });
    });
    g.edges.forEach(function (e) { els.push({ group: "edges", data: edgeData(e) }); });
    return els;
  }

  var last = "", shown = "";
  function draw(text, fetchMs) {
    var t0 = performance.now();
    var g = JSON.parse(text);
    var ids = g.nodes.map(function (n) { return n.id; }).join("\n") + "\n\n" +
      g.edges.map(function (e) { return e.id + " " + e.source + " " + e.target; }).join("\n");
    if (ids === shown) {
      // The same nodes and edges: only states and counts change, in place,
      // so the layout a reviewer is looking at stays.
      g.edges.forEach(function (e) {
        var d = edgeData(e), el = cy.getElementById(e.id);
        el.data({ state: d.state, egress: d.egress, ingress: d.ingress, object: d.object });
      });
    } else {
      shown = ids;
      cy.batch(function () { cy.elements().remove(); cy.add(elements(g)); });
      var layered = g.nodes.length <= layeredLimit && window.cytoscapeDagre;
      cy.layout(layered ? { name: "dagre", rankDir: "LR", nodeSep: 12, rankSep: 60, animate: false }
        : { name: "grid", avoidOverlap: true, condense: true, animate: false }).run();
      cy.fit(undefined, 20);
    }
    var renderMs = performance.now() - t0;
    var counts = Object.keys(g.counts || {}).map(function (k) { return g.counts[k] + " " + k; }).join(", ");
    status.textContent = g.nodes.length + " nodes, " + g.edges.length + " edges" + (counts ? " (" + counts + ")" : "") +
      "; fetched in " + Math.round(fetchMs) + " ms, drawn in " + Math.round(renderMs) + " ms; updated " + new Date().toLocaleTimeString();
    window.reviewTimings = { fetchMs: fetchMs, renderMs: renderMs, nodes: g.nodes.length, edges: g.edges.length,
      readyMs: performance.now() };
    document.body.dataset.graphReady = "1";
  }

  function poll() {
    var t0 = performance.now();
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (r.status === 401 || r.status === 403) { window.location = "/login"; throw new Error("logged out"); }
        if (!r.ok) { throw new Error(r.status + " " + r.statusText); }
        return r.text();
      })
      .then(function (text) {
        if (text !== last) { last = text; draw(text, performance.now() - t0); }
      })
      .catch(function (err) { status.textContent = "the graph did not update: " + err.message; })
      .finally(function () { setTimeout(poll, refresh); });
  }

  cy.on("tap", "node", function (ev) {
    var objs = ev.target.data("objects");
    if (objs && objs.length) { window.location = "/" + objs[0].kind + "s/" + objs[0].namespace + "/" + objs[0].name; }
  });
  cy.on("tap", "edge", function (ev) {
    var o = ev.target.data("object");
    if (o) { window.location = "/" + o.kind + "s/" + o.namespace + "/" + o.name; }
  });
  poll();
})();
