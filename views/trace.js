// The decoding trace, stepped through in the browser (a Streamlit components v2 component, views/trace.py).
//
// Python sends every step once: its numbers, its candidates' figure (viz.candidates_bar), where every head looked
// (the decoder self-attention and cross-attention maps, packed, with the figures viz.heads_at_step built for the
// first step and each step's key axis) and the logit lens. Previous, Next, the slider and the arrow keys redraw
// here with Plotly.react: no script run. Only a what-if word asks the server (a new decoding), and so does leaving
// the step it forced (its result below the trace belongs to that step).
//
// Uses of the framework (views/explorer.js): Explorer.mount, picks, decode, at, follow, el, htmlTable;
// view.chart, view.plot, view.tableSwitch, view.listen, view.redraw.

function rowsAt(m, t) {
  // (L, H, T, K) -> the L*H rows of step t (K values each), as heads_at_step draws them.
  const [L, H] = m.shape;
  return Array.from({length: L * H}, (_, r) => Explorer.at(m, Math.floor(r / H), r % H, t));
}

function chips(tokens, current) {
  // The output so far as the page's chips (views/widgets.py CSS), the step's own token highlighted.
  return tokens.map((tok, i) => Explorer.el("span", {className: i === current ? "chip now" : "chip",
                                                     textContent: tok || "\u00a0"}));
}

function trace({data, parentElement, setTriggerValue}) {
  const {el, say} = Explorer;
  const pick = Explorer.picks(data.slug, data.seq, {step: data.step}, {step: data.n - 1});
  const self = {...data.self, fig: JSON.parse(data.self.figure), m: Explorer.decode(data.self.maps)};
  const cross = {...data.cross, fig: JSON.parse(data.cross.figure), m: Explorer.decode(data.cross.maps)};
  const bars = [];  // parsed on first use

  return Explorer.mount(parentElement, data, {name: "trace", pick, build, draw});

  function go(view, step) {
    step = Math.max(0, Math.min(step, data.n - 1));
    if (step === pick.step) return;
    const leaving = data.whatif && pick.step === data.step;  // a what-if's result below belongs to that step
    pick.step = step;
    view.redraw();
    if (leaving) setTriggerValue("step", step + 1);
  }

  function build(view) {
    const previous = el("button", {type: "button", textContent: say("◀ Previous")});
    const next = el("button", {type: "button", textContent: say("Next ▶")});
    const evidence = el("button", {type: "button", textContent: say("Where it learned this step")});  // view=evidence
    const slider = el("input", {type: "range", min: 1, max: data.n, step: 1});
    slider.setAttribute("aria-label", say("Step"));
    const where = el("p"), chose = el("p");
    const charts = {bar: view.chart("bar"), self: view.chart("self"), cross: view.chart("cross")};
    const tables = {bar: view.tableSwitch(say("Show as a table")), self: view.tableSwitch(say("Show as a table")),
                    cross: view.tableSwitch(say("Show as a table"))};
    const lens = el("div", {className: "table", tabIndex: 0});
    const whatIf = el("select");
    const whatIfLabel = el("label", {className: "whatif"});
    const column = (...names) => el("div", {className: "column"},
                                    ...names.flatMap((n) => [charts[n], tables[n].tools, tables[n].box]));
    view.box.append(
      el("div", {className: "controls"}, previous, next, slider, evidence),
      el("p", {className: "note keys-hint", textContent: say("Keyboard: the ← and → keys step back and forward (Tab "
                                                             + "to the slider and they move it instead).")}),
      where, chose,
      el("div", {className: "columns"}, column("bar", "self"), column("cross")),
      el("p", {}, el("b", {textContent: say("What each decoder layer would say")}), " " + say("(the logit lens)")),
      el("p", {className: "note", textContent: say("The output layer applied to the state after each decoder layer "
        + "(post-LN, so each is already normalised). The last row is the model's real choice; earlier rows show "
        + "how the guess forms.")}),
      lens, whatIfLabel);

    previous.addEventListener("click", () => go(view, pick.step - 1));
    next.addEventListener("click", () => go(view, pick.step + 1));
    evidence.addEventListener("click", () => setTriggerValue("evidence", pick.step + 1));
    slider.addEventListener("input", () => go(view, Number(slider.value) - 1));
    whatIf.addEventListener("change", () => setTriggerValue("whatif", {
      step: pick.step + 1, word: whatIf.value === data.choice ? null : whatIf.value}));
    // The arrow keys step anywhere on the page but in a text box, a list or a slider (which use them themselves).
    view.listen(document, "keydown", (event) => {
      const target = event.composedPath()[0];
      if (event.altKey || event.ctrlKey || event.metaKey || !target || target.isContentEditable
          || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName)
          || target.closest?.("[role=slider], [role=listbox]")) return;
      if (event.key === "ArrowLeft") go(view, pick.step - 1);
      else if (event.key === "ArrowRight") go(view, pick.step + 1);
      else return;
      event.preventDefault();
    });
    return {previous, next, slider, where, chose, charts, tables, lens, whatIf, whatIfLabel};
  }

  async function draw(view) {
    const {previous, next, slider, where, chose, charts, tables, lens, whatIf, whatIfLabel} = view.parts;
    const t = pick.step, s = data.steps[t];
    previous.disabled = t === 0;
    next.disabled = t === data.n - 1;
    slider.value = String(t + 1);
    slider.setAttribute("aria-valuetext", say("step {step} of {n}", {step: t + 1, n: data.n}));
    where.replaceChildren(el("b", {textContent: say("Step {step} of {n}.", {step: t + 1, n: data.n})}),
                          " " + say("Output so far:") + " ",
                          ...chips(data.steps.slice(0, t + 1).map((x) => x.token), t));
    // One sentence with chips in it: the translation's own order, its {fields} filled with elements
    const chip = (className, textContent) => el("span", {className, textContent});
    const parts = {read: chip("chip", s.read), token: chip("chip now", s.token),
                   p: el("b", {textContent: s.prob.toFixed(3)}), entropy: s.entropy.toFixed(2),
                   runner: chip("chip", s.runner[0]), q: s.runner[1].toFixed(3)};
    chose.replaceChildren(...say("Reading {read}, the model chose {token} with probability {p}; entropy {entropy} "
                                 + "nats; runner-up {runner} ({q}).").split(/(\{\w+\})/)
                                 .map((piece) => parts[piece.slice(1, -1)] ?? piece));
    bars[t] ||= JSON.parse(data.bars[t]);
    await view.plot(charts.bar, bars[t], `trace-step${t + 1}-top`);
    const keys = Array.from({length: t + 1}, (_, k) => k);
    const selfRows = rowsAt(self.m, t).map((row) => row.slice(0, t + 1));
    await view.plot(charts.self, {
      data: [{...self.fig.data[0], x: keys, z: selfRows,
              customdata: data.heads_short.map((h) => keys.map((k) => [h, self.labels[k]]))}],
      layout: {...self.fig.layout, xaxis: {...self.fig.layout.xaxis, ...self.axes[t]}}}, `trace-step${t + 1}-self`);
    const crossRows = rowsAt(cross.m, t);
    await view.plot(charts.cross, {data: [{...cross.fig.data[0], z: crossRows}], layout: cross.fig.layout},
                    `trace-step${t + 1}-cross`);
    const fixed = (rows) => rows.map((row) => row.map((v) => v.toFixed(4)));
    tables.bar.fill(() => Explorer.htmlTable(say("Top candidates for step {step} and their probabilities",
                                                 {step: t + 1}), say("candidate"), [say("probability")], s.top_labels,
                                             s.top.map(([, p]) => [p.toFixed(4)])));
    tables.self.fill(() => Explorer.htmlTable(self.table.caption.replace("{step}", t + 1), say("head \\ key"),
                                              self.table.cols.slice(0, t + 1), data.heads, fixed(selfRows)));
    tables.cross.fill(() => Explorer.htmlTable(cross.table.caption.replace("{step}", t + 1), say("head \\ key"),
                                               cross.table.cols, data.heads, fixed(crossRows)));
    const layers = data.lens.chosen.length;
    lens.replaceChildren(Explorer.htmlTable(say("The logit lens at step {step}", {step: t + 1}),
      say("after decoder layer"), [`p(${s.token})`, ...data.lens.top[0][t].map((_, i) => say("top {k}", {k: i + 1}))],
      Array.from({length: layers}, (_, i) => String(i + 1)),
      Array.from({length: layers}, (_, i) => [data.lens.chosen[i][t].toFixed(4),
        ...data.lens.top[i][t].map((tok, j) => `${tok} (${data.lens.probs[i][t][j].toFixed(3)})`)])));
    const forced = t === data.step ? data.whatif : null;
    whatIf.replaceChildren(...[data.choice, ...s.others].map((w) => el("option", {
      value: w, textContent: w, selected: w === (forced || data.choice)})));
    whatIfLabel.replaceChildren(say("What if step {step} had said…", {step: t + 1}) + " ", whatIf);
    // The step only: a what-if word is the server's (it writes whatif, and drops it when its step is left), and a
    // browser value here would race the server's write of the address.
    Explorer.follow(data.slug, {step: String(t + 1)});
  }
}

export default trace;
