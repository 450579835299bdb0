// Inside a head, for any layer, head and query token of one kind of attention, redrawn in the browser
// (views/inside.py).
//
// Python sends every number one teacher-forced pass computed in each layer's attention sublayer of that kind
// (float32: vectors have no bound, and the hover shows 4 decimals), with the figures viz/ built for the first pick
// and the view's text (data.text: each section's title and note, {fields} filled here). A change of layer, head or
// query token swaps the rows, labels and colour range of each figure here: no script run. The nine charts stand one
// under another: those far below the window are drawn when scrolled to (Explorer.mount's `later`).
//
// Uses of the framework (views/explorer.js): Explorer.mount, picks, decode, at, fill, follow, radios, el, htmlTable;
// view.chart, view.plot, view.tableSwitch, view.set.

function strips(fig, rows, labels, highlight) {
  // viz.vector_strips with other rows: values, row names, the symmetric colour range, the outlined row.
  let lim = 0;
  for (const r of rows) for (const v of r) lim = Math.max(lim, Math.abs(v));
  lim ||= 1;
  const d = rows[0].length;
  const y = rows.map((_, i) => i);
  const customdata = labels.map((l) => new Array(d).fill(l));
  const data = [{...fig.data[0], z: rows, y, customdata, zmin: -lim, zmax: lim}];
  const layout = {...fig.layout, yaxis: {...fig.layout.yaxis, tickvals: y, ticktext: labels}};
  if (highlight !== undefined) layout.shapes = [{...fig.layout.shapes[0], y0: highlight - 0.5, y1: highlight + 0.5}];
  return {data, layout};
}

function bars(fig, columns, allowed, masked, extra = () => ({})) {
  // viz.score_chain or viz.weights_and_norms with other values: one horizontal bar chart per column.
  const data = fig.data.map((trace, i) => {
    const [base, fmt] = columns[i].style, digits = Number(fmt[1]), vals = columns[i].values;
    return {...trace, x: vals.map((v, k) => (allowed[k] ? v : 0)),
            text: vals.map((v, k) => (allowed[k] ? v.toFixed(digits) : Explorer.say("masked"))),
            marker: {...trace.marker, color: allowed.map((ok) => (ok ? base : masked))}, ...extra(i)};
  });
  return {data, layout: fig.layout};
}

function inside({data, parentElement}) {
  const {el, at, say} = Explorer, L = data.layers, H = data.heads, Q = data.queries.length;
  // The link's pick on a page just opened; then this page's, whatever kind is picked.
  const pick = Explorer.picks(data.slug, data.seq, data.pick, {layer: L - 1, head: H - 1, query: Q - 1});
  const a = Object.fromEntries(Object.entries(data.arrays).map(([name, p]) => [name, Explorer.decode(p)]));
  const figs = Object.fromEntries(Object.entries(data.figures).map(([name, json]) => [name, JSON.parse(json)]));
  const text = data.text;

  return Explorer.mount(parentElement, data, {name: "inside", pick, build, draw, later: true});

  function build(view) {
    const slider = el("input", {type: "range", min: 0, max: Q - 1, step: 1});
    slider.setAttribute("aria-label", text.query);
    slider.addEventListener("input", () => view.set({query: Number(slider.value)}));
    const sliderText = el("span");
    const heading = el("h4");
    const charts = {};
    for (const name of Object.keys(figs)) {
      charts[name] = view.chart(name);
      charts[name].stamp = null;  // new numbers: every figure is drawn again
    }
    const notes = {};
    const section = (name) => {
      notes[name] = el("p", {className: "note"});
      return [el("p", {}, el("b", {textContent: text.sections[name].title})), notes[name]];
    };
    const asTable = view.tableSwitch(text.table.label);
    const pair = (x, y) => el("div", {className: "columns even"}, el("div", {className: "column"}, charts[x]),
                              el("div", {className: "column"}, charts[y]));
    const layers = Explorer.radios(say("Layer"), Array.from({length: L}, (_, l) => [l, String(l + 1)]), pick.layer,
                                   (l) => view.set({layer: l}));
    const heads = Explorer.radios(say("Head"), Array.from({length: H}, (_, h) => [h, String(h + 1)]), pick.head,
                                  (h) => view.set({head: h}));
    view.box.append(
      el("div", {className: "controls"}, layers, heads),
      el("div", {className: "controls"}, el("label", {className: "query"}, text.query + ": ", sliderText), slider),
      heading,
      ...section("x"), charts.x,
      ...section("qkv"), pair("qk", "v"),
      ...section("scores"), charts.scores,
      ...section("sum"), pair("wv", "out"),
      ...section("norms"), charts.norms,
      asTable.tools, asTable.box,
      ...section("heads"), charts.heads, charts.after);
    return {slider, sliderText, heading, charts, notes, asTable, layers, heads};
  }

  async function draw(view) {
    const {slider, sliderText, heading, charts, notes, asTable, layers, heads} = view.parts;
    const l = pick.layer, h = pick.head, q = pick.query, hs = data.hs;
    layers.show(l);
    heads.show(h);
    slider.value = String(q);
    slider.setAttribute("aria-valuetext", data.queries[q]);
    sliderText.textContent = `${q}: ${data.queries[q]}`;
    const name = say("{kind}, layer {layer}, head {head}, query {query}: “{token}”",
                     {kind: data.name, layer: l + 1, head: h + 1, query: q, token: data.queries[q]});
    heading.textContent = name;
    const weights = at(a.weights, l, h, q), allowed = at(a.mask, l, h, q).map((m) => m > 0.5);
    const norms = at(a.norms, l, h, q), scores = at(a.scores, l, h, q), scaled = at(a.scaled, l, h, q);
    const masked = allowed.filter((ok) => !ok).length;
    const values = {token: data.query_tokens[q], masked, sum: weights.reduce((s, w) => s + w, 0).toFixed(6)};
    for (const [section, {note, masked: whenMasked}] of Object.entries(text.sections)) {
      notes[section].textContent = Explorer.fill(masked && whenMasked ? whenMasked : note, values);
    }
    const v = () => at(a.v, l, h);  // (K, hs): every key's value
    const labels = data.labels;
    const hover = (w, k) => (allowed[k]
      ? `${say("key")} ${labels.positioned[k]}<br>${say("weight")} α ${w.toFixed(4)}<br>‖α·f(x)‖ ${norms[k].toFixed(4)}`
        + `<br>‖f(x)‖ ${w > 1e-12 ? (norms[k] / w).toFixed(3) : say("(weight 0)")}`
      : `${say("key")} ${labels.positioned[k]}<br>${say("masked: a future position")}`);
    // Each figure, and the picks it depends on: a change of head leaves x and what follows W_O as they are, a
    // change of query the values v; a change of layer changes them all.
    const ld = `layer${l + 1}`, hd = `head${h + 1}`, qd = `query${q}`;
    const figures = {
      x: [[ld, qd], () => strips(figs.x, [at(a.x, l, q)], [labels.x[q]])],
      qk: [[ld, hd, qd], () => strips(figs.qk, [at(a.q, l, h, q), ...at(a.k, l, h)], [labels.q[q], ...labels.k])],
      v: [[ld, hd], () => strips(figs.v, v(), labels.v)],
      scores: [[ld, hd, qd], () => bars(figs.scores, [scores, scaled, weights].map((values, i) => ({
        values, style: data.bars.chain[i]})), allowed, data.bars.masked,
                                        () => ({textposition: allowed.map((ok) => (ok ? "auto" : "outside"))}))],
      wv: [[ld, hd, qd], () => strips(figs.wv, v().map((row, k) => row.map((x) => x * weights[k])),
                                    weights.map((w, k) => `${w.toFixed(3)} × v: ${labels.wv[k]}`))],
      out: [[ld, hd, qd], () => strips(figs.out, [at(a.heads, l, h, q)], [say("head {head}", {head: h + 1})])],
      norms: [[ld, hd, qd], () => bars(figs.norms, [weights, norms].map((values, i) => ({
        values, style: data.bars.norms[i]})), allowed, data.bars.masked, () => ({hovertext: weights.map(hover)}))],
      heads: [[ld, hd, qd], () => strips(figs.heads, Array.from({length: H}, (_, i) => at(a.heads, l, i, q)),
                                       Array.from({length: H}, (_, i) => say("head {head}", {head: i + 1})), h)],
      after: [[ld, qd], () => strips(figs.after, ["attn_out", "residual", "normed", "layer_output"].map(
        (n) => at(a[n], l, q)), text.after)],
    };
    for (const [key, [deps, make]] of Object.entries(figures)) {
      const stamp = deps.join("-");
      if (charts[key].stamp === stamp) continue;  // what it shows has not changed
      await view.plot(charts[key], make(), `${data.kind}-${key}-${stamp}`);
      charts[key].stamp = stamp;
    }
    asTable.fill(() => Explorer.htmlTable(`${name}: ${text.table.caption}`, say("key"),
      [say("score q·k"), say("scaled q·k / √{d}", {d: hs}), say("weight") + " α", "‖α·f(x)‖"], labels.keys_table,
      weights.map((_, k) => (allowed[k] ? [scores[k], scaled[k], weights[k], norms[k]].map((x) => x.toFixed(4))
                                        : Array(4).fill(say("masked"))))));
    Explorer.follow(data.slug, {layer: String(l + 1), head: String(h + 1), query: String(q)});
  }
}

export default inside;
