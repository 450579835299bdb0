// The small framework the page's browser-drawn views share. views/instant.py puts this file before each component's
// own (views/maps.js, trace.js, inside.js), which reaches it through the one name declared here, `Explorer`:
//
//   Explorer.mount(root, data, {name, pick, build, draw, first, later})  a view's life: render token, page look,
//                                          style and box, one redraw at a time, charts far below drawn later, ready
//   Explorer.decode(packed) -> {values, shape}                     the numbers Python packed (views/instant.py)
//   Explorer.at(array, ...index)                                   one indexer into a decoded array
//   Explorer.picks(slug, seq, first, limits)                       one pick store: the server's pick, then the page's
//
// and small helpers (el, radios, htmlTable, save, fill, follow, decimals). Prose comes from Python, in `data`.

const Explorer = (() => {
  // The controls look like Streamlit's segmented controls in either theme: the theme's text colour, translucent
  // greys, the picked one tinted and bordered in the primary colour (its text stays the text colour, for contrast).
  const CSS = `
.explorer .controls {display:flex; flex-wrap:wrap; gap:0.6rem 1.2rem; align-items:flex-end; margin:0.3rem 0}
.explorer .group {display:flex; flex-wrap:wrap; align-items:center; gap:0}
.explorer .group .label {width:100%; font-size:0.875rem; margin-bottom:0.25rem}
.explorer button {font:inherit; font-size:0.875rem; color:inherit; background:transparent; cursor:pointer;
  border:1px solid rgba(128,128,128,0.45); padding:0.25rem 0.7rem; min-height:2.2rem; margin:0 -1px 0 0}
.explorer .group button:first-of-type {border-radius:0.5rem 0 0 0.5rem}
.explorer .group button:last-of-type {border-radius:0 0.5rem 0.5rem 0}
.explorer button[aria-checked="true"] {background:rgba(255,75,75,0.12); border-color:rgb(255,75,75);
  position:relative; font-weight:600}
.explorer button:hover {border-color:currentColor}
.explorer button:focus-visible {outline:2px solid currentColor; outline-offset:2px}
.explorer .tools button, .explorer .clear {border-radius:0.5rem; margin:0.2rem 0}
.explorer label {font-size:0.875rem; display:inline-flex; gap:0.35rem; align-items:center; margin-right:1rem}
.explorer .note, .explorer .grid-title, .explorer .header {margin:0.4rem 0}
.explorer .note {font-size:0.875rem; opacity:0.8}
.explorer .panels {display:flex; flex-wrap:wrap; gap:1rem}
.explorer .panel {max-width:100%; overflow-x:auto}
.explorer .panels.pair > .panel {flex:1 1 0; min-width:0}
.explorer .table {max-height:560px; overflow:auto; max-width:100%}
.explorer .table:empty {display:none}
.explorer table {border-collapse:collapse; font-size:0.8rem}
.explorer caption {text-align:left; font-size:0.8rem; opacity:0.8; padding:0.2rem 0}
.explorer th, .explorer td {border:1px solid rgba(128,128,128,0.35); padding:0.15rem 0.4rem;
  white-space:nowrap; text-align:right}
.explorer th {font-weight:600}
.explorer .grid {max-width:100%; overflow-x:auto}
.explorer .columns {display:grid; grid-template-columns:2fr 3fr; gap:1rem}
@media (max-width: 800px) {.explorer .columns {grid-template-columns:1fr}}
.explorer .column {min-width:0}
.explorer .columns.even {grid-template-columns:1fr 1fr}
@media (max-width: 800px) {.explorer .columns.even {grid-template-columns:1fr}}
.explorer input[type=range] {flex:1 1 12rem; min-width:8rem; accent-color:rgb(255,75,75)}
.explorer select {font:inherit; color:inherit; background:transparent; border:1px solid rgba(128,128,128,0.45);
  border-radius:0.5rem; padding:0.25rem 0.5rem; margin-left:0.4rem}
.explorer select option {color:initial}
.explorer-trace .controls button {border-radius:0.5rem; margin:0}
`;

  // --- plotly.js -----------------------------------------------------------------------------------------------

  function loadPlotly(src) {
    // plotly.js, served by the app (no CDN), once per page: one promise on the window, shared by every component
    // (each carries its own copy of this framework: two views mounted together load it once).
    // `src` is its gzipped copy (views/instant.py serve_plotly): unzipped here and run from a blob: URL, so that the
    // server sends stored bytes instead of compressing the file for every page. A browser without
    // DecompressionStream loads the plain copy.
    if (!window.explorerPlotly) {
      window.explorerPlotly = window.Plotly ? Promise.resolve(window.Plotly) : (async () => {
        let url = src.replace(/\.gz$/, "");
        if (window.DecompressionStream) {
          const answer = await fetch(src);
          if (!answer.ok) throw new Error(`plotly.js did not load from ${src}: ${answer.status}`);
          const code = answer.body.pipeThrough(new DecompressionStream("gzip"));
          const blob = await new Response(code, {headers: {"Content-Type": "text/javascript"}}).blob();
          url = URL.createObjectURL(blob);
        }
        await new Promise((resolve, reject) => {
          const tag = document.createElement("script");
          tag.src = url;
          tag.onload = resolve;
          tag.onerror = () => reject(new Error(`plotly.js did not load from ${src}`));
          document.head.appendChild(tag);
        });
        if (url.startsWith("blob:")) URL.revokeObjectURL(url);
        return window.Plotly;
      })().catch(error => { window.explorerPlotly = null; throw error; });
    }
    return window.explorerPlotly;
  }

  // --- The address bar -----------------------------------------------------------------------------------------
  // Streamlit writes the link the server knows after a script run (views/state.py write_url), and the server never
  // hears of a pick made here. So each address Streamlit writes gets this page's picks for its view merged back
  // in, and a pick made here rewrites the address at once: a copied link always opens what is on screen.

  window.explorerLinks ||= {};  // view slug -> the link parameters this page's picks decide ({name: value, or null})

  function withPicks(url) {
    const u = new URL(url, window.location.href);
    const own = window.explorerLinks[u.searchParams.get("view")];
    for (const [name, value] of Object.entries(own || {})) {
      if (value === null) u.searchParams.delete(name); else u.searchParams.set(name, value);
    }
    return u.toString();
  }

  if (!window.history.explorerPicks) {  // once per page, however often a component's module is evaluated
    for (const method of ["pushState", "replaceState"]) {
      const original = window.history[method].bind(window.history);
      window.history[method] = (state, unused, url) => original(state, unused, url == null ? url : withPicks(url));
    }
    window.history.explorerPicks = true;
  }

  function follow(slug, params) {
    // The address bar says `params` for the view `slug` (null: the parameter is left out).
    window.explorerLinks[slug] = params;
    const next = withPicks(window.location.href);
    if (next !== window.location.href) window.history.replaceState(window.history.state, "", next);
  }

  // --- The numbers: one decoder, one indexer -------------------------------------------------------------------

  function bytes(b64) {
    // base64 -> its bytes, in a buffer of their own (so typed arrays over it start aligned)
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function decode(p) {
    // An array as Python sends it -> {values, shape, step}: views.instant.packed's uint16 codes {b64, shape,
    // offset, step} as their values, offset + code * step (a Float64Array: the number the hover, table and CSV
    // round), or views.instant.float32's {b64, shape} as its Float32Array (step undefined). Typed arrays read in
    // the machine's order, little-endian on every browser platform, as Python writes them.
    const raw = bytes(p.b64).buffer;
    let values;
    if (p.step === undefined) {
      values = new Float32Array(raw);
    } else {
      const codes = new Uint16Array(raw);
      values = new Float64Array(codes.length);
      for (let i = 0; i < codes.length; i++) values[i] = p.offset + codes[i] * p.step;
    }
    const size = p.shape.reduce((n, d) => n * d, 1);
    if (values.length !== size) throw new Error(`${values.length} numbers arrived for shape [${p.shape}]`);
    return {values, shape: p.shape, step: p.step};
  }

  function at(a, ...index) {
    // The part of decoded array `a` at the leading indices, as plain nested arrays (a number when every axis is
    // indexed): at(maps, layer, head) is one (Q, K) map as Q rows of K; at(v, layer, head, key) one vector.
    let start = 0;
    a.shape.forEach((n, d) => {
      const i = d < index.length ? index[d] : 0;
      if (!(Number.isInteger(i) && i >= 0 && i < n)) {
        throw new RangeError(`index ${i} is outside axis ${d} (length ${n}) of an array of shape [${a.shape}]`);
      }
      start = start * n + i;
    });
    const nest = (offset, dims) => {
      const [n, ...inner] = dims;
      if (!inner.length) return Array.from(a.values.subarray(offset, offset + n));
      const size = inner.reduce((s, d) => s * d, 1);
      return Array.from({length: n}, (_, i) => nest(offset + i * size, inner));
    };
    const rest = a.shape.slice(index.length);
    return rest.length ? nest(start, rest) : a.values[start];
  }

  const decimals = (a) => Math.max(0, Math.round(-Math.log10(a.step)));  // a packed array's: 4 for weights

  // --- The picks ---------------------------------------------------------------------------------------------

  const stores = {};  // view slug -> this page's picks; they outlive reruns

  function picks(slug, seq, first, limits = {}) {
    // The picks of the view `slug`: the server's (`first`) when the view is first drawn and whenever the server
    // sets new ones (its count `seq` changes; a view that sends none keeps the page's for good), the page's own
    // after. Each pick named in `limits` is clamped to it (a shorter sentence, a kind with fewer layers).
    let pick = stores[slug];
    if (!pick || pick.seq !== seq) pick = stores[slug] = {...first, seq};
    for (const [name, top] of Object.entries(limits)) pick[name] = Math.min(pick[name], top);
    return pick;
  }

  // --- Drawing -------------------------------------------------------------------------------------------------

  function pageLook(host) {
    // The page's text colour and font, read once per render (reading computed styles on every redraw forces the
    // browser to lay out the whole page).
    const style = getComputedStyle(host);
    return {color: style.color, family: style.fontFamily};
  }

  // px: the least cell a 12 px tick label fits beside its neighbours (15), and room for the label margins, which do
  // not shrink with the figure
  const LEGIBLE = 18;

  function wholeAxes(layout) {
    // Whether every token of a map has its label (viz labels them all up to about 34 tokens, thins them past).
    return ["xaxis", "yaxis"].every((name) => {
      const axis = layout[name];
      return !axis || !Array.isArray(axis.tickvals) || !Array.isArray(axis.range)
        || axis.tickvals.length === Math.round(Math.abs(axis.range[1] - axis.range[0]));
    });
  }

  function fitted(layout, room, rescale = true) {
    // A figure viz sized in pixels, narrowed to the room there is (an 800 px window, a phone): its square cells
    // shrink with it (rescale: the height too, less the labels' share). A map whose tokens all have labels shrinks
    // no further than cells of LEGIBLE px (viz puts its cell size in layout.meta.cell): past that it keeps every
    // label and scrolls sideways in its panel, so that a phone names every row and column of a 20-token sentence.
    if (!layout.width || !room || layout.width <= room) return layout;
    const cell = layout.meta && layout.meta.cell;
    // A figure may name its own least width (viz model_view: tiles whose cells stay visible); it scrolls past that.
    const least = rescale && cell && wholeAxes(layout) ? LEGIBLE / cell
      : (layout.meta && layout.meta.min_width ? layout.meta.min_width / layout.width : 0);
    const scale = Math.min(1, Math.max(room / layout.width, least));
    if (scale === 1) {  // kept whole, wider than the room (it scrolls): the title starts where the room shows it
      return layout.title && layout.title.text
        ? {...layout, title: {...layout.title, x: 0, xanchor: "left", xref: "container"}} : layout;
    }
    const width = Math.round(layout.width * scale);
    const out = {...layout, width};
    // Plotly does not wrap titles: a long one ("Decoder self-attention, layer 1, mean of the 8 heads") gets a
    // smaller font that fits the room (about 0.55 em a character; Plotly's default title size is 17 px).
    const text = layout.title && layout.title.text;
    if (text) {
      const size = Math.max(11, Math.min(17, Math.floor((Math.min(room, width) - 20) / (0.55 * columns(text)))));
      if (size < 17) out.title = {...layout.title, font: {...(layout.title.font || {}), size}};
      // wider than the room (it scrolls): the title starts at the left edge, where the room shows it whole
      if (width > room) out.title = {...(out.title || layout.title), x: 0, xanchor: "left", xref: "container"};
    }
    if (!rescale) return out;
    if (layout.height) out.height = Math.round(layout.height * scale + 120 * (1 - scale));
    // Token labels thinned as the cells shrink, so that none overprints another; none where cells stay legible.
    const every = cell && cell * scale >= LEGIBLE - 0.5 ? 1 : Math.ceil(1 / scale);
    if (cell && cell * scale < layout.meta.upright && layout.xaxis && layout.xaxis.tickangle === -45) {
      out.xaxis = {...layout.xaxis, tickangle: -90};  // slanted labels need cells of meta.upright px
    }
    for (const name of ["xaxis", "yaxis"]) {
      const axis = layout[name];
      if (axis && Array.isArray(axis.tickvals) && axis.tickvals.length > 8) {
        out[name] = {...(out[name] || axis), tickvals: axis.tickvals.filter((_, i) => i % every === 0),
                     ticktext: (axis.ticktext || []).filter((_, i) => i % every === 0)};
      }
    }
    return out;
  }

  function columns(text) {
    // A text's width in Latin characters: Hangul and the CJK scripts draw about twice as wide (viz/labels.py columns)
    const wide = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60]/;
    let n = 0;
    for (const c of text) n += wide.test(c) ? 2 : 1;
    return n;
  }

  function titled(layout, room) {
    // A title wider than its room (a phone) wraps at spaces into lines that fit: Plotly neither wraps a title nor
    // keeps it inside the chart (fitted shrinks its font first, down to 11 px). The top margin grows a line a line.
    const title = layout.title, text = title && title.text;
    const width = Math.min(room || Infinity, layout.width || Infinity);
    if (!text || !Number.isFinite(width)) return layout;
    const size = (title.font && title.font.size) || 17;
    const fits = Math.max(12, Math.floor((width - 24) / (0.55 * size)));
    const lines = [];
    for (const part of text.split("<br>")) {
      let line = "";
      for (const word of part.split(" ")) {
        if (line && columns(line + " " + word) > fits) {
          lines.push(line);
          line = word;
        } else line = line ? line + " " + word : word;
      }
      lines.push(line);
    }
    if (lines.length === text.split("<br>").length) return layout;
    const margin = layout.margin || {};
    const added = (lines.length - text.split("<br>").length) * Math.round(size * 1.3);
    return {...layout, title: {...title, text: lines.join("<br>")}, margin: {...margin, t: (margin.t ?? 80) + added},
            ...(layout.height ? {height: layout.height + added} : {})};
  }

  function themed(layout, look) {
    // Transparent paper and the page's own text colour and font: readable in the light and the dark theme; grid
    // and zero lines, where an axis draws them, in a translucent grey on either background (plotly.js's own #eee
    // glares on the dark one; a template's colour is a default: it turns no grid on); axes make room for their
    // labels (as Streamlit's own chart theme does). No axis checks whether its tick labels overflow the chart
    // (ticklabeloverflow "allow"; with room made for the labels there is nothing to hide): plotly.js measured every
    // label for it, a forced layout each, and Inside a head's ten charts took 1.04 s of the main thread to draw
    // first, 0.92 s without (a V8 profile).
    const axes = {};
    for (const name of new Set(["xaxis", "yaxis", ...Object.keys(layout).filter((n) => /^[xy]axis\d*$/.test(n))])) {
      const margin = name === "xaxis" || name === "yaxis" ? {automargin: true} : {};
      axes[name] = {ticklabeloverflow: "allow", ...margin, ...(layout[name] || {})};
    }
    const lines = {gridcolor: "rgba(128,128,128,0.25)", zerolinecolor: "rgba(128,128,128,0.5)"};
    return {...layout, ...axes, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
            template: {layout: {xaxis: lines, yaxis: lines}},
            font: {...(layout.font || {}), color: look.color, family: look.family}};
  }

  function plot(Plotly, chart, data, layout, format, file) {
    // Plotly.react(chart, data, layout) with the chart's options: no logo, no "Share chart..." (plotly.js 4 offers
    // to upload the chart to Plotly's cloud; Streamlit's charts did not), and a camera that saves what the chart
    // shows now, named `file`, as the export section says (PNG at twice the size, or SVG). The options object stays
    // the same from pick to pick (the camera reads the name when clicked): given options that differ from the last
    // ones, Plotly.react draws the chart anew from nothing, twice (newPlot, then react), which was most of a pick's
    // time.
    chart.explorerFile = file;
    if (chart.explorerFormat !== format) {
      chart.explorerFormat = format;
      chart.explorerConfig = {displaylogo: false, showSendToCloud: false, modeBarButtonsToRemove: ["toImage"],
                              modeBarButtonsToAdd: [{
        name: say("Download plot as a {format}", {format: format.toUpperCase()}), icon: Plotly.Icons.camera,
        click: (gd) => Plotly.downloadImage(gd, {format, scale: 2, filename: gd.explorerFile})}]};
    }
    return Plotly.react(chart, data, layout, chart.explorerConfig);
  }

  function save(text, name) {
    // `text` downloaded as the CSV file `name`.
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], {type: "text/csv"}));
    a.download = name;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }

  function el(tag, props = {}, ...children) {
    const e = Object.assign(document.createElement(tag), props);
    e.append(...children);
    return e;
  }

  function fill(template, values) {
    // Python's text with its {name} fields filled from `values`, in one pass (a value is never read as a field).
    return template.replace(/\{(\w+)\}/g, (field, name) => (name in values ? String(values[name]) : field));
  }

  function htmlTable(caption, corner, cols, rows, cells) {
    // A table screen readers walk cell by cell (named rows and columns); every name and value set as text.
    const t = el("table");
    t.createCaption().textContent = caption;
    const head = t.createTHead().insertRow();
    head.append(el("th", {textContent: corner}), ...cols.map((c) => el("th", {scope: "col", textContent: c})));
    const body = t.createTBody();
    cells.forEach((row, i) => {
      const tr = body.insertRow();
      tr.append(el("th", {scope: "row", textContent: rows[i]}));
      for (const v of row) tr.insertCell().textContent = v;
    });
    return t;
  }

  function radios(name, options, current, onPick) {
    // A labelled group of toggle buttons (role radio), as Streamlit's segmented control is for assistive tech.
    // group.show(value) marks another one picked, without rebuilding the buttons (the keyboard focus stays).
    const group = el("div", {className: "group"});
    group.setAttribute("role", "radiogroup");
    group.setAttribute("aria-label", name);
    group.append(el("span", {className: "label", textContent: name}));
    const buttons = options.map(([value, text]) => {
      const b = el("button", {type: "button", textContent: text});
      b.setAttribute("role", "radio");
      b.addEventListener("click", () => onPick(value));
      group.append(b);
      return [value, b];
    });
    group.show = (picked) => buttons.forEach(([value, b]) => b.setAttribute("aria-checked", String(value === picked)));
    group.show(current);
    return group;
  }

  function redrawer(draw) {
    // One redraw at a time: a pick made while one runs (a held arrow key, quick clicks) is drawn once it ends,
    // with the latest picks, so the page always ends on the last one.
    let running = null, again = false;
    return function request() {
      if (running) { again = true; return running; }
      running = (async () => {
        try { do { again = false; await draw(); } while (again); } finally { running = null; }
      })();
      return running;
    };
  }

  // --- Drawn charts kept for a view's next visit ------------------------------------------------------------
  // A view left is unmounted by Streamlit, and drawn again from nothing when it comes back: plotly.js's drawing was
  // most of a second visit (0.2-0.5 s of the browser's main thread for a view with a dozen charts). So an unmounted
  // component's chart divs, still drawn, are kept with the data they were drawn from (the last KEEP components: every
  // view of the page mounts 47 for a 15-token sentence, and keeping them all took 44 MB of the page's JS heap), and
  // a mount of the same component key with the same data takes them back: a chart whose last drawing had the same
  // picks, room, look and file is not drawn again (view.plot). Other data: they are freed, and the charts drawn anew.

  const KEEP = 120;
  const kept = window.explorerKept ||= new Map();  // component key -> {sign, divs}, the least recently left first

  function free(divs) {
    for (const div of Object.values(divs)) {
      if (watcher) watcher.unobserve(div);
      if (window.Plotly) window.Plotly.purge(div);
    }
  }

  function takeBack(key, sign) {
    const last = kept.get(key);
    kept.delete(key);
    if (last && last.sign === sign) {
      for (const div of Object.values(last.divs)) div.explorerCarried = true;
      return last.divs;
    }
    if (last) free(last.divs);
    return {};
  }

  function keep(key, sign, divs) {
    if (key === undefined) return free(divs);
    kept.delete(key);
    kept.set(key, {sign, divs});
    while (kept.size > KEEP) {
      const [oldest, last] = kept.entries().next().value;
      kept.delete(oldest);
      free(last.divs);
    }
  }

  // --- Charts below the window, drawn when they come near it ------------------------------------------------
  // A view that mounts with `later` (Inside a head: nine charts, two of them on a 900 px screen) draws a chart far
  // below the window when it is scrolled near, not with the rest: its first visit took 0.8 s of the main thread,
  // most of it charts nobody could see yet. Such a chart keeps its place (its figure's height) and carries
  // data-later until drawn; a newer pick replaces what it waits to draw. Each chart's drawings run one after
  // another (a pick's and a scroll's could otherwise meet in one Plotly.react).

  const AHEAD = 0.5;  // of the window's height: how far below it a chart is drawn at once, and drawn when scrolled to

  function farBelow(chart) {
    return chart.isConnected && chart.getBoundingClientRect().top > (1 + AHEAD) * window.innerHeight;
  }

  function drawNow(chart, now) {
    delete chart.explorerLater;
    const drawn = (chart.explorerDrawing || Promise.resolve()).then(now, now);
    chart.explorerDrawing = drawn.then(() => {
      if (chart.explorerLater) return;  // a newer pick waits: its place stays held
      delete chart.dataset.later;
      chart.style.minHeight = "";
    }, () => {});
    return drawn;
  }

  let watcher = null;

  function drawLater(chart, now, height) {
    chart.explorerLater = now;
    chart.dataset.later = "1";
    if (!chart.querySelector(".main-svg")) chart.style.minHeight = `${height || 450}px`;  // plotly.js's own default
    watcher ||= new IntersectionObserver((entries) => {
      for (const {target, isIntersecting} of entries) {
        if (!isIntersecting || !target.explorerLater) continue;
        watcher.unobserve(target);  // watched again if a later pick leaves it far below
        drawNow(target, target.explorerLater);
      }
    }, {rootMargin: `0px 0px ${AHEAD * 100}% 0px`});
    watcher.unobserve(chart);  // so that observe answers at once if the chart is already near
    watcher.observe(chart);
    return Promise.resolve(chart);
  }

  // --- A view's life -------------------------------------------------------------------------------------------

  function unlisten(root) {
    // The listeners a render of `root` added (view.listen) removed.
    for (const [target, type, handler] of root.explorerListeners || []) target.removeEventListener(type, handler);
    root.explorerListeners = [];
  }

  let words = {};  // the page's language: English text -> its translation (views/instant.py JS_WORDS), per render

  function say(english, fields = {}) {
    // `english` in the page's language, its {fields} filled: what a person reads is never written here in English
    // only (tests/unit/test_i18n.py holds every text said in views/*.js to views/instant.py JS_WORDS).
    return (words[english] ?? english).replace(/\{(\w+)\}/g, (found, name) => name in fields ? fields[name] : found);
  }

  function mount(root, data, {name, pick, build, draw, first, later = false}) {
    words = data.words || {};
    // Draw the view `name` in `root` (the component's parentElement) from `data` (what Python sent). The component
    // is called again with new data (a new sentence) without being torn down: each call is a render, and only the
    // latest one draws (its token). It gets `view`:
    //   view.data, view.pick (from picks), view.box (div.explorer.explorer-NAME), view.parts (what build returned)
    //   view.chart(key)           a chart's div that outlives renders: Plotly updates it in place
    //   view.plot(chart, fig, file, fit)  Plotly.react with the page's look (fit: {rescale} narrows it to the box)
    //   view.tableSwitch(label)   a "show as a table" switch: {tools, box, fill(make)}, redrawn when flipped
    //   view.listen(target, type, handler)  a listener that lasts as long as this render
    //   view.redraw(), view.set(change)  draw again (after changing the picks)
    // build(view) makes the view's elements (in view.box) and returns them; draw(view) draws the picks, one redraw
    // at a time (data-drawn counts them); first(view), if given, runs once after the first draw; then data-ready.
    // later: a chart that view.plot finds more than half a window below the window is drawn when it comes that near
    // (drawLater), not with the rest; data-ready then means that what a person can see is drawn.
    // Returns the teardown the component returns to Streamlit.
    const token = {};
    root.explorerRender = token;
    unlisten(root);  // the last render's
    const sign = JSON.stringify(data);  // what this render draws from
    root.explorerDivs ||= takeBack(data.key, sign);  // a new mount: the charts its last visit left, if still right
    root.explorerKept = [data.key, sign];
    const look = pageLook(root.host || root);
    const box = el("div", {className: `explorer explorer-${name}`});
    root.replaceChildren(el("style", {textContent: CSS}), box);
    const current = () => root.explorerRender === token;  // no newer render took over
    const view = {
      data, pick, box, parts: null, Plotly: null,
      chart: (key, className = "chart") => (root.explorerDivs[key] ||= el("div", {className})),
      plot(chart, fig, file, fit) {
        const room = (fit && fit.room) || box.clientWidth;
        const shown = JSON.stringify([pick, room, fit, look, data.image_format, file]);
        const carried = chart.explorerCarried;
        chart.explorerCarried = false;
        if (carried && chart.explorerShown === shown) return Promise.resolve(chart);  // drawn so at the last visit
        const Plotly = view.Plotly;
        const now = () => {
          chart.explorerShown = shown;
          const layout = titled(fit ? fitted(fig.layout, room, fit.rescale) : fig.layout, room);
          return plot(Plotly, chart, fig.data, themed(layout, look), data.image_format, file);
        };
        if (!later) return now();
        return farBelow(chart) ? drawLater(chart, now, fig.layout && fig.layout.height) : drawNow(chart, now);
      },
      tableSwitch(label) {
        const toggle = el("input", {type: "checkbox"});
        toggle.setAttribute("role", "switch");  // as Streamlit's toggles are: "Show as a table" switches
        toggle.addEventListener("change", () => view.redraw());
        const table = el("div", {className: "table", tabIndex: 0});
        return {tools: el("div", {className: "tools"}, el("label", {}, toggle, " " + label)), box: table,
                fill: (make) => table.replaceChildren(...(toggle.checked ? [make()] : []))};
      },
      listen(target, type, handler) {
        target.addEventListener(type, handler);
        root.explorerListeners.push([target, type, handler]);
      },
      redraw: redrawer(async () => {
        view.Plotly = await loadPlotly(data.plotly);
        if (!current()) return;
        await draw(view);
        box.dataset.drawn = String(Number(box.dataset.drawn || 0) + 1);  // benches and tests wait for the next one
      }),
      set(change) {
        Object.assign(pick, change);
        view.redraw();
      },
    };
    view.parts = build(view);
    view.redraw().then(async () => {
      if (first && current()) await first(view);
      box.dataset.ready = "1";  // the view's first full drawing is done: what a person waits for after Enter
    });
    return () => {  // unmounted: its listeners dropped, its charts kept for the next visit
      unlisten(root);
      keep(...root.explorerKept, root.explorerDivs || {});  // drawn, for the next visit
      root.explorerDivs = {};
    };
  }

  return {mount, say, decode, at, decimals, picks, follow, el, fill, htmlTable, radios, save};
})();
