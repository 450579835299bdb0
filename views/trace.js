// The decoding trace, stepped through in the browser (a Streamlit components v2 component, views/trace.py).
//
// Python sends every step once: its numbers, its candidates' figure (viz.candidates_bar), where every head looked
// (the decoder self-attention and cross-attention maps, packed, with the figures viz.heads_at_step built for the
// first step and each step's key axis) and the logit lens. Previous, Next, the slider and the arrow keys redraw
// here with Plotly.react: no script run. Only a what-if word asks the server (a new decoding), and so does leaving
// the step it forced (its result below the trace belongs to that step).

const steps = {};  // view slug -> this page's step {seq, step}; it outlives reruns

function rowsAt(m, t) {
  // (L, H, T, K) -> the L*H rows of step t (K values each), as heads_at_step draws them.
  const [L, H, T, K] = m.shape;
  const rows = [];
  for (let r = 0; r < L * H; r++) {
    const base = (r * T + t) * K;
    rows.push(Array.from({length: K}, (_, k) => m.offset + m.codes[base + k] * m.step));
  }
  return rows;
}

function chips(tokens, current) {
  // The output so far as the page's chips (views/widgets.py CSS), the step's own token highlighted.
  return tokens.map((tok, i) => el("span", {className: i === current ? "chip now" : "chip", textContent: tok || "\u00a0"}));
}

export default function ({data, parentElement, setTriggerValue}) {
  const root = parentElement;
  const token = {};
  root.explorerRender = token;
  let pick = steps[data.slug];
  if (!pick || pick.seq !== data.seq) pick = steps[data.slug] = {seq: data.seq, step: data.step};
  pick.step = Math.min(pick.step, data.n - 1);
  const look = pageLook(root.host || root);
  const self = {...data.self, fig: JSON.parse(data.self.figure), m: unpack(data.self.maps)};
  const cross = {...data.cross, fig: JSON.parse(data.cross.figure), m: unpack(data.cross.maps)};
  const bars = [];  // parsed on first use

  const previous = el("button", {type: "button", textContent: "◀ Previous"});
  const next = el("button", {type: "button", textContent: "Next ▶"});
  const evidence = el("button", {type: "button", textContent: "Where it learned this step"});  // view=evidence
  const slider = el("input", {type: "range", min: 1, max: data.n, step: 1});
  slider.setAttribute("aria-label", "Step");
  const where = el("p"), chose = el("p");
  const charts = {bar: keep(root, "bar", "chart"), self: keep(root, "self", "chart"), cross: keep(root, "cross", "chart")};
  const switches = {}, tables = {};
  for (const [name, label] of [["bar", "Show as a table"], ["self", "Show as a table"], ["cross", "Show as a table"]]) {
    switches[name] = el("input", {type: "checkbox"});
    switches[name].setAttribute("role", "switch");
    switches[name].addEventListener("change", () => draw());
    tables[name] = el("div", {className: "table", tabIndex: 0});
    charts[name].after = el("div", {className: "tools"}, el("label", {}, switches[name], " " + label));
  }
  const lens = el("div", {className: "table", tabIndex: 0});
  const whatIf = el("select");
  const whatIfLabel = el("label", {className: "whatif"});
  const column = (...names) => el("div", {className: "column"}, ...names.flatMap((n) => [charts[n], charts[n].after, tables[n]]));
  const box = el("div", {className: "explorer explorer-trace"});
  root.replaceChildren(el("style", {textContent: CSS}), box);
  box.append(
    el("div", {className: "controls"}, previous, next, slider, evidence),
    el("p", {className: "note", textContent: "Keyboard: the ← and → keys step back and forward (Tab to the slider "
                                              + "and they move it instead)."}),
    where, chose,
    el("div", {className: "columns"}, column("bar", "self"), column("cross")),
    el("p", {}, el("b", {textContent: "What each decoder layer would say"}), " (the logit lens)"),
    el("p", {className: "note", textContent: "The output layer applied to the state after each decoder layer "
      + "(post-LN, so each is already normalised). The last row is the model's real choice; earlier rows show how "
      + "the guess forms."}),
    lens, whatIfLabel);

  function go(step) {
    step = Math.max(0, Math.min(step, data.n - 1));
    if (step === pick.step) return;
    const leaving = data.whatif && pick.step === data.step;  // a what-if's result below belongs to that step
    pick.step = step;
    draw();
    if (leaving) setTriggerValue("step", step + 1);
  }

  const draw = redrawer(async () => {
    const Plotly = await loadPlotly(data.plotly);
    if (root.explorerRender !== token) return;
    const t = pick.step, s = data.steps[t];
    previous.disabled = t === 0;
    next.disabled = t === data.n - 1;
    slider.value = String(t + 1);
    slider.setAttribute("aria-valuetext", `step ${t + 1} of ${data.n}`);
    where.replaceChildren(el("b", {textContent: `Step ${t + 1} of ${data.n}.`}), " Output so far: ",
                          ...chips(data.steps.slice(0, t + 1).map((x) => x.token), t));
    chose.replaceChildren("Reading ", el("span", {className: "chip", textContent: s.read}), ", the model chose ",
                          el("span", {className: "chip now", textContent: s.token}), " with probability ",
                          el("b", {textContent: s.prob.toFixed(3)}), `; entropy ${s.entropy.toFixed(2)} nats; runner-up `,
                          el("span", {className: "chip", textContent: s.runner[0]}), ` (${s.runner[1].toFixed(3)}).`);
    bars[t] ||= JSON.parse(data.bars[t]);
    await plot(Plotly, charts.bar, bars[t].data, themed(bars[t].layout, look), data.image_format, `trace-step${t + 1}-top`);
    const keys = Array.from({length: t + 1}, (_, k) => k);
    const selfRows = rowsAt(self.m, t).map((row) => row.slice(0, t + 1));
    const selfFig = {data: [{...self.fig.data[0], x: keys, z: selfRows,
                             customdata: data.heads_short.map((h) => keys.map((k) => [h, self.labels[k]]))}],
                     layout: {...self.fig.layout, xaxis: {...self.fig.layout.xaxis, ...self.axes[t]}}};
    await plot(Plotly, charts.self, selfFig.data, themed(selfFig.layout, look), data.image_format, `trace-step${t + 1}-self`);
    const crossRows = rowsAt(cross.m, t);
    await plot(Plotly, charts.cross, [{...cross.fig.data[0], z: crossRows}], themed(cross.fig.layout, look),
               data.image_format, `trace-step${t + 1}-cross`);
    const fixed = (rows) => rows.map((row) => row.map((v) => v.toFixed(4)));
    tables.bar.replaceChildren(...(switches.bar.checked ? [htmlTable(`Top candidates for step ${t + 1} and their `
      + "probabilities", "candidate", ["probability"], s.top_labels, s.top.map(([, p]) => [p.toFixed(4)]))] : []));
    tables.self.replaceChildren(...(switches.self.checked ? [htmlTable(self.table.caption.replace("{step}", t + 1),
      "head \\ key", self.table.cols.slice(0, t + 1), data.heads, fixed(selfRows))] : []));
    tables.cross.replaceChildren(...(switches.cross.checked ? [htmlTable(cross.table.caption.replace("{step}", t + 1),
      "head \\ key", cross.table.cols, data.heads, fixed(crossRows))] : []));
    const layers = data.lens.chosen.length;
    lens.replaceChildren(htmlTable(`The logit lens at step ${t + 1}`, "after decoder layer",
      [`p(${s.token})`, ...data.lens.top[0][t].map((_, i) => `top ${i + 1}`)],
      Array.from({length: layers}, (_, i) => String(i + 1)),
      Array.from({length: layers}, (_, i) => [data.lens.chosen[i][t].toFixed(4),
        ...data.lens.top[i][t].map((tok, j) => `${tok} (${data.lens.probs[i][t][j].toFixed(3)})`)])));
    const forced = t === data.step ? data.whatif : null;
    whatIf.replaceChildren(...[data.choice, ...s.others].map((w) => el("option", {value: w, textContent: w,
                                                                             selected: w === (forced || data.choice)})));
    whatIfLabel.replaceChildren(`What if step ${t + 1} had said… `, whatIf);
    // The step only: a what-if word is the server's (it writes whatif, and drops it when its step is left), and a
    // browser value here would race the server's write of the address.
    follow(data.slug, {step: String(t + 1)});
    drawn(box);
  });

  previous.addEventListener("click", () => go(pick.step - 1));
  next.addEventListener("click", () => go(pick.step + 1));
  evidence.addEventListener("click", () => setTriggerValue("evidence", pick.step + 1));
  slider.addEventListener("input", () => go(Number(slider.value) - 1));
  whatIf.addEventListener("change", () => setTriggerValue("whatif", {step: pick.step + 1,
                                                                     word: whatIf.value === data.choice ? null : whatIf.value}));
  // The arrow keys step anywhere on the page but in a text box, a list or a slider (which use them themselves).
  const onKey = (event) => {
    const target = event.composedPath()[0];
    if (event.altKey || event.ctrlKey || event.metaKey || !target || target.isContentEditable
        || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.closest?.("[role=slider], [role=listbox]")) return;
    if (event.key === "ArrowLeft") go(pick.step - 1);
    else if (event.key === "ArrowRight") go(pick.step + 1);
    else return;
    event.preventDefault();
  };
  // The component is called again for each new sentence without being torn down: one listener, this render's.
  if (root.explorerKeys) document.removeEventListener("keydown", root.explorerKeys);
  root.explorerKeys = onKey;
  document.addEventListener("keydown", onKey);
  draw().then(() => ready(box));
  return () => {
    document.removeEventListener("keydown", onKey);
    forget(root);
  };
}
