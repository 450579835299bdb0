// The attention views' maps, redrawn in the browser (a Streamlit components v2 component, views/instant.py).
//
// Python sends, once per sentence (and per choice of values or comparison), every map of one kind: each layer's
// heads and their mean, packed as uint16 codes (value = offset + code * step), with the figures viz/ built for the
// first pick, the title and colour range of every pick, and each layer's line figure. A change of layer, head,
// drawing (map or lines), colour stretch, a tile of the all-heads grid or a token's lines is drawn here with
// Plotly.react: no script run, no round trip to the server. The address bar follows every pick (explorer.js `follow`).

const picks = {};  // view slug -> this page's picks {seq, layer, head, draw, stretch, focus}; they outlive reruns

function matrix(m, layer, head, causal) {
  // One map (Q rows of K values) of the (L, H + 1, Q, K) array; null where a decoder query may not look.
  const [, H1, Q, K] = m.shape;
  const base = (layer * H1 + head) * Q * K;
  const rows = [];
  for (let q = 0; q < Q; q++) {
    const row = new Array(K);
    for (let k = 0; k < K; k++) row[k] = causal && k > q ? null : m.offset + m.codes[base + q * K + k] * m.step;
    rows.push(row);
  }
  return rows;
}

// --- Drawing ---------------------------------------------------------------------------------------------------

function heatmap(panel, pick) {
  // The panel's heatmap figure (viz.attention_heatmap, sent without its cells) with the picked map's values, the
  // cells' hover names, its title and colour range; a decoder map's future cells in the grey "masked" trace.
  const fig = panel.fig;
  const [, , Q, K] = panel.m.shape;
  panel.cells ||= panel.labels.q.map((q) => panel.labels.k.map((k) => [q, k]));
  const [cmin, cmax, scale] = panel.scales[pick.layer][pick.head][pick.stretch ? 1 : 0];
  const axis = fig.layout.coloraxis;
  panel.future ||= Array.from({length: Q}, (_, q) => Array.from({length: K}, (_, k) => (k > q ? 1 : null)));
  const data = fig.data.map((trace, i) => ({...trace, customdata: panel.cells,
                                             z: i === 0 ? matrix(panel.m, pick.layer, pick.head, panel.causal) : panel.future}));
  const layout = {...fig.layout, title: {...fig.layout.title, text: panel.titles[pick.layer][pick.head]},
                  coloraxis: {...axis, cmin, cmax, colorbar: {...axis.colorbar, title: {text: scale}}}};
  return {data, layout};
}

function grid(fig, panel, gap) {
  // viz.model_view's heatmap (sent without its cells) filled from the panel's maps: layer l, head h, query q, key
  // k is the cell at row l (Q + gap) + q, column h (K + gap) + k, as model_view places it, with customdata [layer,
  // head, query, key] (a click names its tile); a decoder map's future cells are in the second ("masked") trace.
  // The gaps stay empty (null).
  const m = panel.m, [L, H1, Q, K] = m.shape, H = H1 - 1;
  const rows = L * (Q + gap) - gap, cols = H * (K + gap) - gap;
  const empty = () => Array.from({length: rows}, () => new Array(cols).fill(null));
  const z = empty(), future = empty(), cells = empty();
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
    const layer = String(l + 1), head = String(h + 1);
    for (let q = 0; q < Q; q++) {
      const r = l * (Q + gap) + q, base = ((l * H1 + h) * Q + q) * K;
      for (let k = 0; k < K; k++) {
        const c = h * (K + gap) + k;
        cells[r][c] = [layer, head, panel.labels.q[q], panel.labels.k[k]];
        if (panel.causal && k > q) future[r][c] = 1;
        else z[r][c] = m.offset + m.codes[base + k] * m.step;
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
          if (trace.y[i + (side === "query" ? 0 : 1)] === pos) { x.push(0, 1, null); y.push(trace.y[i], trace.y[i + 1], null); }
        }
        Object.assign(out, {x, y});
      }
      return out;
    }
    const mine = trace.name === `${side} tokens`;  // a column of token markers: the focused one ringed
    const n = trace.y.length;
    const focused = (i) => mine && i === pos;
    return {...trace, marker: {...trace.marker, size: Array.from({length: n}, (_, i) => (focused(i) ? 13 : 9)),
                               line: {...trace.marker.line, width: Array.from({length: n}, (_, i) => (focused(i) ? 2 : 0))}}};
  });
  return {data, layout: {...fig.layout, title: {...fig.layout.title, text: panel.titles[pick.layer][pick.head]}}};
}

function table(panel, pick) {
  // The picked map as a table, with the values the chart holds.
  const digits = decimals(panel.m);
  const cells = matrix(panel.m, pick.layer, pick.head, panel.causal).map((row) =>
    row.map((v) => (v === null ? "masked" : v.toFixed(digits))));
  return htmlTable(panel.titles[pick.layer][pick.head] + panel.table.axes, "query \\ key", panel.table.cols,
                   panel.table.rows, cells);
}

function csv(panel, pick) {
  // The picked map as model.export.map_csv writes it (cells quoted in Python), a row per query and key.
  const z = matrix(panel.m, pick.layer, pick.head, false);
  const digits = decimals(panel.m);
  const out = [panel.csv.header];
  z.forEach((row, q) => row.forEach((v, k) => out.push(`${panel.csv.rows[q]},${panel.csv.cols[k]},${v.toFixed(digits)}`)));
  return out.join("\n") + "\n";
}

export default function ({data, parentElement}) {
  const root = parentElement;
  const token = {};
  root.explorerRender = token;
  const L = data.layers, H = data.heads;
  let pick = picks[data.slug];
  if (!pick || pick.seq !== data.seq) pick = picks[data.slug] = {seq: data.seq, focus: null, ...data.pick};
  pick.layer = Math.min(pick.layer, L - 1);
  pick.head = Math.min(pick.head, H);
  if (data.norms) pick.stretch = false;  // norms have their own range always

  const panels = [...data.panels, ...(data.difference ? [data.difference] : [])].map((p, i) => ({
    ...p, fig: JSON.parse(p.figure), m: unpack(p.maps), index: i, isDifference: i >= data.panels.length,
  }));
  const look = pageLook(root.host || root);
  const controls = el("div", {className: "controls"});
  const note = el("p", {className: "note", textContent: data.mean_note});
  const boxes = panels.map((p, i) => {
    const chart = keep(root, `chart${i}`, "chart");
    const clear = el("button", {type: "button", className: "clear"});
    const tableBox = el("div", {className: "table", tabIndex: 0});
    const showTable = el("input", {type: "checkbox"});
    showTable.setAttribute("role", "switch");  // as Streamlit's toggles are: "Show as a table" switches
    const tools = el("div", {className: "tools"}, el("label", {}, showTable, " " + p.table.label));
    let csvButton = null;
    if (p.csv) {
      csvButton = el("button", {type: "button", textContent: p.csv.label});
      tools.append(csvButton);
    }
    const header = p.header ? el("p", {className: "header"}, el("b", {textContent: p.header[0]}), ": " + p.header[1]) : "";
    const box = el("div", {className: p.isDifference ? "panel difference" : "panel"}, header, chart, clear, tools, tableBox);
    return {p, box, chart, clear, showTable, tableBox, csvButton};
  });
  const gridChart = keep(root, "grid", "grid");
  const box = el("div", {className: "explorer explorer-maps"});
  root.replaceChildren(el("style", {textContent: CSS}), box);
  box.append(controls, note, el("div", {className: "panels"}, ...boxes.filter((b) => !b.p.isDifference).map((b) => b.box)),
             ...boxes.filter((b) => b.p.isDifference).map((b) => b.box),
             el("p", {className: "grid-title", textContent: data.grid_title}), gridChart);

  const name = (p, suffix = "") => data.names[pick.layer][pick.head] + (p.isDifference ? "-difference" : p.index ? "-second" : "") + suffix;

  const groups = [
    radios("Layer", Array.from({length: L}, (_, i) => [i, String(i + 1)]), pick.layer, (v) => set({layer: v})),
    radios("Head", [[H, "mean"], ...Array.from({length: H}, (_, h) => [h, String(h + 1)])], pick.head, (v) => set({head: v})),
    radios("Draw as", [["map", "map"], ["lines", "lines"]], pick.draw, (v) => set({draw: v}))];
  const stretch = el("input", {type: "checkbox"});
  stretch.addEventListener("change", () => set({stretch: stretch.checked}));
  controls.append(...groups, el("label", {className: "stretch", title: "Colour from 0 to this map's largest weight "
    + "instead of the fixed 0–1 scale: more contrast, but colours no longer compare between maps. (Norms always "
    + "have their own range.)"}, stretch, " Stretch colours"));

  function drawControls() {
    groups.forEach((g, i) => g.show([pick.layer, pick.head, pick.draw][i]));
    Object.assign(stretch, {checked: pick.stretch, disabled: data.norms || pick.draw === "lines"});
  }

  const draw = redrawer(async () => {
    const Plotly = await loadPlotly(data.plotly);
    if (root.explorerRender !== token) return;  // a newer render took over
    drawControls();
    note.hidden = pick.head !== H;
    for (const b of boxes) {
      const asLines = pick.draw === "lines" && !b.p.isDifference;
      const fig = asLines ? lines(b.p, pick, H) : heatmap(b.p, pick);
      await plot(Plotly, b.chart, fig.data, themed(fitted(fig.layout, box.clientWidth, !asLines), look), data.image_format,
                 name(b.p, asLines ? "-lines" : ""));
      b.clear.hidden = !(asLines && pick.focus);
      if (pick.focus) b.clear.textContent = `Show every token's lines (now only ${pick.focus[0]} ${pick.focus[1]})`;
      b.tableBox.replaceChildren(...(b.showTable.checked ? [table(b.p, pick)] : []));
    }
    follow(data.slug, {layer: String(pick.layer + 1), head: pick.head === H ? "mean" : String(pick.head + 1),
                       draw: pick.draw === "lines" ? "lines" : null});
    drawn(box);
  });

  function set(change) {
    Object.assign(pick, change);
    draw();
  }

  for (const b of boxes) {
    b.showTable.addEventListener("change", draw);
    b.clear.addEventListener("click", () => set({focus: null}));
    if (b.csvButton) b.csvButton.addEventListener("click", () => save(csv(b.p, pick), name(b.p, ".csv")));
  }

  draw().then(async () => {
    const Plotly = await loadPlotly(data.plotly);
    if (root.explorerRender !== token) return;
    const all = grid(JSON.parse(data.grid), panels[0], data.gap);
    await plot(Plotly, gridChart, all.data, themed(fitted(all.layout, box.clientWidth), look), data.image_format,
               `${data.slug}-all-heads`);
    gridChart.removeAllListeners("plotly_click");  // the last render's
    gridChart.on("plotly_click", (event) => {  // a tile: customdata [layer, head, ...], counted from 1
      const cd = event.points[0] && event.points[0].customdata;
      if (!cd) return;
      set({layer: Number(cd[0]) - 1, head: Number(cd[1]) - 1});
      boxes[0].box.scrollIntoView({block: "nearest"});
    });
    for (const b of boxes) {
      b.chart.removeAllListeners("plotly_click");
      b.chart.on("plotly_click", (event) => {  // a token of the line view: only its lines; again: all
        const cd = event.points[0] && event.points[0].customdata;
        if (pick.draw !== "lines" || !cd || (cd[0] !== "query" && cd[0] !== "key")) return;
        const same = pick.focus && pick.focus[0] === cd[0] && pick.focus[1] === Number(cd[1]);
        set({focus: same ? null : [cd[0], Number(cd[1])]});
      });
    }
    ready(box);
  });

  return () => forget(root);  // unmounted: free the charts and their listeners
}
