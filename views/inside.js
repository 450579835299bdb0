// Inside a head, for any layer, head and query token of one kind of attention, redrawn in the browser
// (views/inside.py).
//
// Python sends every number one teacher-forced pass computed in each layer's attention sublayer of that kind
// (float32: vectors have no bound, and the hover shows 4 decimals), with the figures viz/ built for the first pick.
// A change of layer, head or query token swaps the rows, labels and colour range of each figure here: no script
// run.

const insidePicks = {};  // view slug -> this page's pick {layer, head, query}

function at(a, ...index) {
  // The row (last axis) of array `a` at the leading indices, as a plain array of numbers.
  const n = a.shape[a.shape.length - 1];
  let offset = 0;
  index.forEach((i, d) => { offset = offset * a.shape[d] + i; });
  for (let d = index.length; d < a.shape.length - 1; d++) offset *= a.shape[d];
  return Array.from(a.values.subarray(offset * n, offset * n + n));
}

function strips(fig, rows, labels, highlight) {
  // viz.vector_strips with other rows: values, row names, the symmetric colour range, the outlined row.
  let lim = 0;
  for (const r of rows) for (const v of r) lim = Math.max(lim, Math.abs(v));
  lim ||= 1;
  const d = rows[0].length;
  const y = rows.map((_, i) => i);
  const data = [{...fig.data[0], z: rows, y, customdata: labels.map((l) => new Array(d).fill(l)), zmin: -lim, zmax: lim}];
  const layout = {...fig.layout, yaxis: {...fig.layout.yaxis, tickvals: y, ticktext: labels}};
  if (highlight !== undefined) layout.shapes = [{...fig.layout.shapes[0], y0: highlight - 0.5, y1: highlight + 0.5}];
  return {data, layout};
}

function bars(fig, columns, allowed, masked, extra = () => ({})) {
  // viz.score_chain or viz.weights_and_norms with other values: one horizontal bar chart per column.
  const data = fig.data.map((trace, i) => {
    const [base, fmt] = columns[i].style, digits = Number(fmt[1]), vals = columns[i].values;
    return {...trace, x: vals.map((v, k) => (allowed[k] ? v : 0)),
            text: vals.map((v, k) => (allowed[k] ? v.toFixed(digits) : "masked")),
            marker: {...trace.marker, color: allowed.map((ok) => (ok ? base : masked))}, ...extra(i)};
  });
  return {data, layout: fig.layout};
}

export default function ({data, parentElement}) {
  const root = parentElement;
  const token = {};
  root.explorerRender = token;
  const L = data.layers, H = data.heads, Q = data.queries.length, K = data.keys.length;
  const pick = insidePicks[data.slug] ||= {...data.pick};  // the link's, on a page just opened; then this page's
  pick.layer = Math.min(pick.layer, L - 1);
  pick.query = Math.min(pick.query, Q - 1);
  const a = Object.fromEntries(Object.entries(data.arrays).map(([name, p]) => [name, unpack32(p)]));
  const figs = Object.fromEntries(Object.entries(data.figures).map(([name, json]) => [name, JSON.parse(json)]));
  const look = pageLook(root.host || root);

  const controls = el("div", {className: "controls"});
  const slider = el("input", {type: "range", min: 0, max: Q - 1, step: 1});
  slider.setAttribute("aria-label", "Query token (the row that is looking)");
  const sliderText = el("span");
  const heading = el("h4");
  const text = {};
  const charts = {};
  for (const name of Object.keys(figs)) {
    charts[name] = keep(root, name, "chart");
    charts[name].stamp = null;  // new numbers: every figure is drawn again
  }
  const section = (title, name) => { text[name] = el("p", {className: "note"}); return [el("p", {}, el("b", {textContent: title})), text[name]]; };
  const tableSwitch = el("input", {type: "checkbox"});
  tableSwitch.setAttribute("role", "switch");
  const tableBox = el("div", {className: "table", tabIndex: 0});
  const pair = (x, y) => el("div", {className: "columns even"}, el("div", {className: "column"}, charts[x]), el("div", {className: "column"}, charts[y]));
  const box = el("div", {className: "explorer explorer-inside"});
  root.replaceChildren(el("style", {textContent: CSS}), box);
  box.append(
    controls, el("div", {className: "controls"}, el("label", {className: "query"}, "Query token (the row that is looking): ", sliderText), slider),
    heading,
    ...section("1. The query's input vector x", "x"), charts.x,
    ...section("2. Query, keys and values of this head", "qkv"), pair("qk", "v"),
    ...section("3. Scores, scaled scores, softmax", "scores"), charts.scores,
    ...section("4. The weighted sum of the values: this head's output", "sum"), pair("wv", "out"),
    ...section("Weight or norm? What each key adds", "norms"), charts.norms,
    el("div", {className: "tools"}, el("label", {}, tableSwitch, " Show as a table")), tableBox,
    ...section("5. All heads together, then W_O, the residual and LayerNorm", "heads"), charts.heads, charts.after);

  const layers = radios("Layer", Array.from({length: L}, (_, l) => [l, String(l + 1)]), pick.layer, (l) => set({layer: l}));
  const heads = radios("Head", Array.from({length: H}, (_, h) => [h, String(h + 1)]), pick.head, (h) => set({head: h}));
  controls.append(layers, heads);

  const draw = redrawer(async () => {
    const Plotly = await loadPlotly(data.plotly);
    if (root.explorerRender !== token) return;
    const l = pick.layer, h = pick.head, q = pick.query, hs = data.hs;
    layers.show(l);
    heads.show(h);
    slider.value = String(q);
    slider.setAttribute("aria-valuetext", data.queries[q]);
    sliderText.textContent = `${q}: ${data.queries[q]}`;
    const qt = data.query_tokens[q];
    const name = `${data.name}, layer ${l + 1}, head ${h + 1}, query ${q}: “${data.queries[q]}”`;
    heading.textContent = name;
    const weights = at(a.weights, l, h, q), allowed = at(a.mask, l, h, q).map((m) => m > 0.5);
    const norms = at(a.norms, l, h, q), scores = at(a.scores, l, h, q), scaled = at(a.scaled, l, h, q);
    const masked = allowed.filter((ok) => !ok).length;
    const sum = weights.reduce((s, w) => s + w, 0);
    text.x.textContent = `What this sublayer received for “${qt}”: ${data.where}. ${data.D} numbers.`;
    text.qkv.textContent = `q = x·W_Q, k = x·W_K, v = x·W_V, each cut to this head's ${hs} dimensions. One q for the `
      + "query; one k and one v for every key token.";
    text.scores.textContent = `The score of each key is q·k (how well it answers the query); divided by √${hs} = `
      + `${Math.sqrt(hs).toFixed(2)} so that the softmax does not saturate; then softmax turns them into weights that `
      + "sum to 1. " + (masked ? `${masked} future position(s) are masked: the decoder may not look ahead, so their `
        + "scaled score is set to a very large negative number and their weight is exactly 0."
        : "Nothing is masked here. With a batch of sentences, padding keys would be masked the same way (weight "
        + "exactly 0); one sentence has no padding.");
    text.sum.textContent = `Each v is scaled by its weight; their sum is the head's output for this query (${hs} `
      + `numbers). The weights sum to ${sum.toFixed(6)}.`;
    text.norms.textContent = "A weight says how much a key is weighed; what it adds to the output is the weight times "
      + "its value, and values differ in length. Right: ‖α·f(x)‖, the length of the weighted value after this head's "
      + "part of W_O (f(x) = (x·W_V + b_V)·W_O of the head; Kobayashi et al., EMNLP 2020). A large weight on a short "
      + "vector moves the query little; hover a bar for ‖f(x)‖ itself.";
    text.heads.textContent = `The ${H} heads' outputs are concatenated (${H} × ${hs} = ${data.D}) and projected by `
      + "W_O; the result is added to x (the residual connection) and normalised (LayerNorm, post-LN as in the "
      + "paper). After the feed-forward sublayer this becomes the layer's output for the token.";
    const v = () => Array.from({length: K}, (_, k) => at(a.v, l, h, k));
    const labels = data.labels;
    // Each figure, and the picks it depends on: a change of head leaves x and what follows W_O as they are, a
    // change of query the values v; a change of layer changes them all.
    const ld = `layer${l + 1}`, hd = `head${h + 1}`, qd = `query${q}`;
    const figures = {
      x: [[ld, qd], () => strips(figs.x, [at(a.x, l, q)], [labels.x[q]])],
      qk: [[ld, hd, qd], () => strips(figs.qk, [at(a.q, l, h, q), ...Array.from({length: K}, (_, k) => at(a.k, l, h, k))],
                                    [labels.q[q], ...labels.k])],
      v: [[ld, hd], () => strips(figs.v, v(), labels.v)],
      scores: [[ld, hd, qd], () => bars(figs.scores, [scores, scaled, weights].map((values, i) => ({values, style: data.bars.chain[i]})),
                                  allowed, data.bars.masked, () => ({textposition: allowed.map((ok) => (ok ? "auto" : "outside"))}))],
      wv: [[ld, hd, qd], () => strips(figs.wv, v().map((row, k) => row.map((x) => x * weights[k])),
                                    weights.map((w, k) => `${w.toFixed(3)} × v: ${labels.wv[k]}`))],
      out: [[ld, hd, qd], () => strips(figs.out, [at(a.heads, l, h, q)], [`head ${h + 1}`])],
      norms: [[ld, hd, qd], () => bars(figs.norms, [weights, norms].map((values, i) => ({values, style: data.bars.norms[i]})), allowed,
                                 data.bars.masked, () => ({hovertext: weights.map((w, k) => (allowed[k]
                                   ? `key ${labels.positioned[k]}<br>weight α ${w.toFixed(4)}<br>‖α·f(x)‖ ${norms[k].toFixed(4)}<br>‖f(x)‖ `
                                     + (w > 1e-12 ? (norms[k] / w).toFixed(3) : "(weight 0)")
                                   : `key ${labels.positioned[k]}<br>masked: a future position`))}))],
      heads: [[ld, hd, qd], () => strips(figs.heads, Array.from({length: H}, (_, i) => at(a.heads, l, i, q)),
                                       Array.from({length: H}, (_, i) => `head ${i + 1}`), h)],
      after: [[ld, qd], () => strips(figs.after, ["attn_out", "residual", "normed", "layer_output"].map((n) => at(a[n], l, q)),
                                    ["after W_O", "x + after W_O", "LayerNorm", "layer output"])],
    };
    for (const [key, [deps, make]] of Object.entries(figures)) {
      const stamp = deps.join("-");
      if (charts[key].stamp === stamp) continue;  // what it shows has not changed
      const fig = make();
      await plot(Plotly, charts[key], fig.data, themed(fig.layout, look), data.image_format, `${data.kind}-${key}-${stamp}`);
      charts[key].stamp = stamp;
    }
    tableBox.replaceChildren(...(tableSwitch.checked ? [htmlTable(`${name}: for every key, its score, scaled score, `
      + "weight and weighted norm", "key", ["score q·k", `scaled q·k / √${hs}`, "weight α", "‖α·f(x)‖"], labels.keys_table,
      weights.map((_, k) => (allowed[k] ? [scores[k], scaled[k], weights[k], norms[k]].map((x) => x.toFixed(4))
                                        : ["masked", "masked", "masked", "masked"])))] : []));
    follow(data.slug, {layer: String(l + 1), head: String(h + 1), query: String(q)});
    drawn(box);
  });

  function set(change) {
    Object.assign(pick, change);
    draw();
  }

  slider.addEventListener("input", () => set({query: Number(slider.value)}));
  tableSwitch.addEventListener("change", () => draw());
  draw().then(() => ready(box));
  return () => forget(root);
}
