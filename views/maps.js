// The attention views' maps, redrawn in the browser (a Streamlit components v2 component, views/instant.py).
//
// Python sends, once per sentence (and per choice of values or comparison), every map of one kind: each layer's
// heads and their mean, packed as uint16 codes (value = offset + code * step), with the figures viz/ built for the
// first pick, the title and colour range of every pick, and each layer's line figure. A change of layer, head,
// drawing (map or lines), colour stretch, a tile of the all-heads grid or a token's lines is drawn here with
// Plotly.react: no script run, no round trip to the server. The address bar follows every pick.
//
// Uses of the framework (views/explorer.js): Explorer.mount (with first: the grid, once), picks, decode, at,
// decimals, follow, radios, el, htmlTable, save; view.chart, view.plot, view.tableSwitch, view.set.

function matrix(m, layer, head, causal) {
  // One map (Q rows of K values) of the (L, H + 1, Q, K) array; null where a decoder query may not look.
  const rows = Explorer.at(m, layer, head);
  return causal ? rows.map((row, q) => row.map((v, k) => (k > q ? null : v))) : rows;
}

function heatmap(panel, pick) {
  // The panel's heatmap figure (viz.attention_heatmap, sent without its cells) with the picked map's values, the
  // cells' hover names, its title and colour range; a decoder map's future cells in the grey "masked" trace.
  const fig = panel.fig;
  const [, , Q, K] = panel.m.shape;
  panel.cells ||= panel.labels.q.map((q) => panel.labels.k.map((k) => [q, k]));
  const [cmin, cmax, scale] = panel.scales[pick.layer][pick.head][pick.stretch ? 1 : 0];
  const axis = fig.layout.coloraxis;
  panel.future ||= Array.from({length: Q}, (_, q) => Array.from({length: K}, (_, k) => (k > q ? 1 : null)));
  const z = matrix(panel.m, pick.layer, pick.head, panel.causal);
  const data = fig.data.map((trace, i) => ({...trace, customdata: panel.cells, z: i === 0 ? z : panel.future}));
  const layout = {...fig.layout, title: {...fig.layout.title, text: panel.titles[pick.layer][pick.head]},
                  coloraxis: {...axis, cmin, cmax, colorbar: {...axis.colorbar, title: {text: scale}}}};
  return {data, layout};
}

function grid(fig, panel, gap) {
  // viz.model_view's heatmap (sent without its cells) filled from the panel's maps: layer l, head h, query q, key
  // k is the cell at row l (Q + gap) + q, column h (K + gap) + k, as model_view places it, with customdata [layer,
  // head, query, key] (a click names its tile); a decoder map's future cells are in the second ("masked") trace.
  // The gaps stay empty (null).
  const [L, H1, Q, K] = panel.m.shape, H = H1 - 1;
  const rows = L * (Q + gap) - gap, cols = H * (K + gap) - gap;
  const empty = () => Array.from({length: rows}, () => new Array(cols).fill(null));
  const z = empty(), future = empty(), cells = empty();
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
    const tile = Explorer.at(panel.m, l, h), layer = String(l + 1), head = String(h + 1);
    for (let q = 0; q < Q; q++) {
      const r = l * (Q + gap) + q;
      for (let k = 0; k < K; k++) {
        const c = h * (K + gap) + k;
        cells[r][c] = [layer, head, panel.labels.q[q], panel.labels.k[k]];
        if (panel.causal && k > q) future[r][c] = 1;
        else z[r][c] = tile[q][k];
      }
    }
  }
  const data = fig.data.map((trace, i) => ({...trace, z: i === 0 ? z : future, customdata: cells}));
  return {data, layout: fig.layout};
}

function lines(panel, pick, H) {
  // The line figure (viz.attention_lines of one layer) with the picked layer's lines and tokens' hover
  // (viz.layer_lines): the picked head shown, the others a legend click away (all for the mean); with a focused
  // token, only its lines.
  panel.lineFig ||= JSON.parse(panel.lines.figure);
  const fig = panel.lineFig, layer = panel.lines.layers[pick.layer];
  const [side, pos] = pick.focus || [];
  let n = 0;  // the line traces in order
  const traces = fig.data.map((trace) => {
    if (trace.mode === "lines") { const [x, y] = layer.lines[n++]; return {...trace, x, y}; }
    return {...trace, hovertemplate: layer.hovers[trace.name.split(" ")[0]]};  // "query tokens", "key tokens"
  });
  const data = traces.map((trace) => {
    if (trace.mode === "lines") {
      const head = Number(trace.legendgroup.slice(4));  // "head3"
      const out = {...trace, visible: pick.head === H || pick.head === head ? true : "legendonly"};
      if (pick.focus) {  // segments are [query, key, gap] triples at y = [i, j, null]
        const x = [], y = [];
        for (let i = 0; i < trace.y.length; i += 3) {
          if (trace.y[i + (side === "query" ? 0 : 1)] !== pos) continue;
          x.push(0, 1, null);
          y.push(trace.y[i], trace.y[i + 1], null);
        }
        Object.assign(out, {x, y});
      }
      return out;
    }
    const mine = trace.name === `${side} tokens`;  // a column of token markers: the focused one ringed
    const focused = Array.from({length: trace.y.length}, (_, i) => mine && i === pos);
    return {...trace, marker: {...trace.marker, size: focused.map((f) => (f ? 13 : 9)),
                               line: {...trace.marker.line, width: focused.map((f) => (f ? 2 : 0))}}};
  });
  return {data, layout: {...fig.layout, title: {...fig.layout.title, text: panel.titles[pick.layer][pick.head]}}};
}

function table(panel, pick) {
  // The picked map as a table, with the values the chart holds.
  const digits = Explorer.decimals(panel.m);
  const cells = matrix(panel.m, pick.layer, pick.head, panel.causal).map((row) =>
    row.map((v) => (v === null ? Explorer.say("masked") : v.toFixed(digits))));
  return Explorer.htmlTable(panel.titles[pick.layer][pick.head] + panel.table.axes, Explorer.say("query \\ key"),
                            panel.table.cols,
                            panel.table.rows, cells);
}

function csv(panel, pick) {
  // The picked map as model.export.map_csv writes it (cells quoted in Python), a row per query and key.
  const digits = Explorer.decimals(panel.m);
  const out = [panel.csv.header];
  matrix(panel.m, pick.layer, pick.head, false).forEach((row, q) => row.forEach((v, k) =>
    out.push(`${panel.csv.rows[q]},${panel.csv.cols[k]},${v.toFixed(digits)}`)));
  return out.join("\n") + "\n";
}

const PAIR_MIN = 420;  // px: the least width of each of a comparison's two maps drawn side by side

function maps({data, parentElement}) {
  const {el, say} = Explorer, L = data.layers, H = data.heads;
  const pick = Explorer.picks(data.slug, data.seq, {focus: null, ...data.pick}, {layer: L - 1, head: H});
  if (data.norms) pick.stretch = false;  // norms have their own range always
  const panels = [...data.panels, ...(data.difference ? [data.difference] : [])].map((p, i) => ({
    ...p, fig: JSON.parse(p.figure), m: Explorer.decode(p.maps), index: i, isDifference: i >= data.panels.length,
  }));
  const name = (p, suffix = "") => data.names[pick.layer][pick.head]
    + (p.isDifference ? "-difference" : p.index ? "-second" : "") + suffix;

  return Explorer.mount(parentElement, data, {name: "maps", pick, build, draw, first});

  function build(view) {
    const boxes = panels.map((p, i) => {
      const chart = view.chart(`chart${i}`);
      const clear = el("button", {type: "button", className: "clear"});
      clear.addEventListener("click", () => view.set({focus: null}));
      const asTable = view.tableSwitch(p.table.label);
      if (p.csv) {
        const button = el("button", {type: "button", textContent: p.csv.label});
        button.addEventListener("click", () => Explorer.save(csv(p, pick), name(p, ".csv")));
        asTable.tools.append(button);
      }
      const header = p.header ? el("p", {className: "header"}, el("b", {textContent: p.header[0]}),
                                   ": " + p.header[1]) : "";
      const box = el("div", {className: p.isDifference ? "panel difference" : "panel"}, header, chart, clear,
                     asTable.tools, asTable.box);
      return {p, box, chart, clear, asTable};
    });
    const groups = [
      Explorer.radios(say("Layer"), Array.from({length: L}, (_, i) => [i, String(i + 1)]), pick.layer,
                      (v) => view.set({layer: v})),
      Explorer.radios(say("Head"), [[H, say("mean")], ...Array.from({length: H}, (_, h) => [h, String(h + 1)])],
                      pick.head, (v) => view.set({head: v})),
      Explorer.radios(say("Draw as"), [["map", say("map")], ["lines", say("lines")]], pick.draw,
                      (v) => view.set({draw: v}))];
    const stretch = el("input", {type: "checkbox"});
    stretch.addEventListener("change", () => view.set({stretch: stretch.checked}));
    const note = el("p", {className: "note", textContent: data.mean_note});
    const gridChart = view.chart("grid", "grid");
    const panelRow = el("div", {className: "panels"}, ...boxes.filter((b) => !b.p.isDifference).map((b) => b.box));
    view.box.append(
      el("div", {className: "controls"}, ...groups,
         el("label", {className: "stretch", title: data.stretch.help}, stretch, " " + data.stretch.label)),
      note,
      panelRow,
      ...boxes.filter((b) => b.p.isDifference).map((b) => b.box),
      el("p", {className: "grid-title", textContent: data.grid_title}), gridChart);
    return {boxes, groups, stretch, note, gridChart, panelRow};
  }

  async function draw(view) {
    const {boxes, groups, stretch, note, panelRow} = view.parts;
    // A comparison's two maps side by side where each gets PAIR_MIN px (a 1400 px window), one under the other on
    // a narrower screen; each map fitted to its half.
    const pair = boxes.filter((b) => !b.p.isDifference).length === 2 && view.box.clientWidth >= 2 * PAIR_MIN + 16;
    panelRow.classList.toggle("pair", pair);
    const half = pair ? Math.floor((view.box.clientWidth - 16) / 2) : undefined;
    groups.forEach((g, i) => g.show([pick.layer, pick.head, pick.draw][i]));
    Object.assign(stretch, {checked: pick.stretch, disabled: data.norms || pick.draw === "lines"});
    note.hidden = pick.head !== H;
    for (const b of boxes) {
      const asLines = pick.draw === "lines" && !b.p.isDifference;
      const fig = asLines ? lines(b.p, pick, H) : heatmap(b.p, pick);
      await view.plot(b.chart, fig, name(b.p, asLines ? "-lines" : ""),
                      {rescale: !asLines, room: b.p.isDifference ? undefined : half});
      b.clear.hidden = !(asLines && pick.focus);
      const side = pick.focus && (pick.focus[0] === "query" ? say("query") : say("key"));
      if (pick.focus) b.clear.textContent = say("Show every token's lines (now only {side} {token})",
                                                {side, token: pick.focus[1]});
      b.asTable.fill(() => table(b.p, pick));
    }
    Explorer.follow(data.slug, {layer: String(pick.layer + 1), head: pick.head === H ? "mean" : String(pick.head + 1),
                                draw: pick.draw === "lines" ? "lines" : null});
  }

  async function first(view) {
    // The all-heads grid, drawn once (no pick changes it), and the clicks on it and on the line view's tokens.
    const {boxes, gridChart} = view.parts;
    await view.plot(gridChart, grid(JSON.parse(data.grid), panels[0], data.gap), `${data.slug}-all-heads`,
                    {rescale: true});
    gridChart.removeAllListeners("plotly_click");  // the last render's
    gridChart.on("plotly_click", (event) => {  // a tile: customdata [layer, head, ...], counted from 1
      const cd = event.points[0] && event.points[0].customdata;
      if (!cd) return;
      view.set({layer: Number(cd[0]) - 1, head: Number(cd[1]) - 1});
      boxes[0].box.scrollIntoView({block: "nearest"});
    });
    for (const b of boxes) {
      b.chart.removeAllListeners("plotly_click");
      b.chart.on("plotly_click", (event) => {  // a token of the line view: only its lines; again: all
        const cd = event.points[0] && event.points[0].customdata;
        if (pick.draw !== "lines" || !cd || (cd[0] !== "query" && cd[0] !== "key")) return;
        const same = pick.focus && pick.focus[0] === cd[0] && pick.focus[1] === Number(cd[1]);
        view.set({focus: same ? null : [cd[0], Number(cd[1])]});
      });
    }
  }
}

export default maps;
