"""One translation as a single self-contained HTML page: for a slide, a course page or an e-mail, opened from disk.

    from viz.report import report_html
    html = report_html(tr.translate(sentence), provenance(tr))   # what the page's "Download as an HTML page" gives

`python -m viz.report SENTENCE --out FILE` is the command that writes it (`main`, below). The page holds the
sentence and its translation; every attention map (encoder self, decoder self, cross; every layer and head) drawn by
attention_heatmap as on the page, named, captioned and labelled as the page's attention views are (KIND_NAMES,
map_caption, token_labels, subtitle), with a layer and a head switch for each kind; the decoding trace (each step's
candidates and their probabilities); and the provenance record (model/export.py). plotly.js comes from the
installed plotly package, inside the file: it opens with no network.

The maps are embedded once, rounded to DIGITS decimals, in a JSON block; a switch hands the chosen head's map to
Plotly.react (a few lines of commented JavaScript at the end of the file). Everything the sentence decides (the
sentence, tokens, titles) is escaped: as HTML in the page's text, and as \\u003c... inside the JSON block, so
"</script>" in a sentence stays text. The same result and provenance give the same bytes: no dates, no random ids.
"""

import functools
import html
import json

import numpy as np
import plotly.io as pio
import plotly.offline

from model import files
from model.i18n import _, language
from model.languages import language_names
from model.result import KIND_NAMES

from .attention import attention_heatmap, causal_mask
from .labels import SIDES, map_caption, subtitle, token_labels

DIGITS = 4  # decimals of the embedded maps: the hover shows 4 (attention_heatmap), so nothing visible is lost
# Characters that could end the JSON block or open markup inside it, as JSON escapes (JSON.parse reads the same).
JSON_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})
SCRIPT = """
// Layer and head switches. The JSON block above holds, for each kind of attention, the figure viz/ drew
// (without its values) and maps[layer][head]: every map's cells, rounded (null: a masked future position).
const report = JSON.parse(document.getElementById("report-data").textContent);
for (const [kind, k] of Object.entries(report.kinds)) {
  const layer = document.getElementById(kind + "-layer"), head = document.getElementById(kind + "-head");
  function draw() {
    const l = Number(layer.value), h = Number(head.value);
    // Only the first trace (the weights) changes; the grey trace of masked cells stays as it is.
    const data = [{...k.figure.data[0], z: k.maps[l][h]}, ...k.figure.data.slice(1)];
    const name = report.title.replace("{kind}", k.name).replace("{layer}", l + 1).replace("{head}", h + 1);
    const layout = {...k.figure.layout, title: {...k.figure.layout.title, text: name}};
    // As on the page: the camera saves PNG at twice the size, named after the map.
    const config = {displaylogo: false,
                    toImageButtonOptions: {format: "png", scale: 2, filename: `${kind}-layer${l + 1}-head${h + 1}`}};
    Plotly.react(kind + "-map", data, layout, config);
  }
  layer.addEventListener("change", draw);
  head.addEventListener("change", draw);
  draw();
}
"""
STYLE = """
body {font-family: system-ui, sans-serif; max-width: 1100px; margin: 1.5em auto; padding: 0 1em; color: #1f2430}
.sentence {font-size: 1.25em} .translation {font-size: 1.25em; font-weight: 600}
label {margin-right: 1.2em} select {font-size: 1em}
table {border-collapse: collapse} th, td {border-bottom: 1px solid #ddd; padding: 3px 10px; text-align: left}
td.num {text-align: right; font-variant-numeric: tabular-nums} .chosen {font-weight: 700; color: #c03d00}
pre {background: #f4f4f4; padding: .8em; overflow-x: auto} .caption {color: #555}
"""


def _cells(maps, causal: bool) -> list:
    """(L, H, Q, K) -> nested lists rounded to DIGITS, None where a decoder query may not look."""
    a = np.round(np.asarray(maps, dtype=np.float64), DIGITS)
    if causal:
        a = np.where(causal_mask(*a.shape[-2:]), np.nan, a)
    return np.where(np.isnan(a), None, a).tolist()


def _figure(result, kind: str) -> dict:
    """The page's map of layer 1, head 1 (attention_heatmap) as Plotly JSON, its values left out (the switch script
    fills them in from the maps)."""
    (q_tokens, q_unk), (k_tokens, k_unk) = (token_labels(result, side) for side in SIDES[kind])
    fig = attention_heatmap(result.maps(kind)[0, 0], q_tokens, k_tokens, causal=kind == "dec", query_unknown=q_unk,
                            key_unknown=k_unk, title=_(KIND_NAMES[kind]), subtitle=subtitle(result.source))
    # Plotly's own template and JSON engine, whatever the process's defaults (Streamlit sets its theme's template,
    # app.py the engine): the same bytes from the page and the CLI.
    fig.update_layout(template=pio.templates["plotly"])
    figure = json.loads(pio.to_json(fig, engine="json"))
    del figure["data"][0]["z"]
    return figure


def _trace_table(result) -> str:
    """The decoding trace as an HTML table: per step, the token read, the one chosen, its probability, the
    entropy and the top candidates with their probabilities (the chosen one marked)."""
    rows = []
    for t, (read, step) in enumerate(zip(result.tgt_tokens, result.steps), 1):
        candidates = ", ".join(
            f'<span class="{"chosen" if token == step.token else "cand"}">{html.escape(token)}</span> {p:.4f}'
            for token, p in step.top)
        rows.append(f"<tr><td class=num>{t}</td><td>{html.escape(read)}</td><td class=chosen>"
                    f"{html.escape(step.token)}</td><td class=num>{step.prob:.4f}</td><td class=num>"
                    f"{step.entropy:.3f}</td><td>{candidates}</td></tr>")
    heads = (_("step"), _("reads"), _("chooses"), _("probability"), _("entropy (nats)"), _("top candidates"))
    return ("<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in heads) + "</tr></thead><tbody>\n"
            + "\n".join(rows) + "\n</tbody></table>")


def _select(kind: str, what: str, n: int) -> str:
    options = "".join(f'<option value="{i}">{i + 1}</option>' for i in range(n))
    label = html.escape({"layer": _("Layer"), "head": _("Head")}[what])
    return f'<label>{label} <select id="{kind}-{what}" name="{kind}-{what}">{options}</select></label>'


@functools.cache
def _plotly_js() -> str:
    """plotly.js from the installed package (4.8 MB): read once per process, not once per report."""
    return plotly.offline.get_plotlyjs()


def report_html(result, provenance: dict, names=("German", "English")) -> str:
    """The whole report of one Translation (with its maps) and its provenance (model.export.provenance): one HTML
    document, plotly.js included; names: the source's and the target's language as the captions say them
    (model.languages.language_names). Deterministic: the same arguments give the same string."""
    if any(np.asarray(result.maps(kind)).ndim != 4 for kind in KIND_NAMES):
        raise ValueError("this result has no attention maps: translate with with_maps=True to report them")
    data = {"kinds": {}, "title": _("{kind}, layer {layer}, head {head}")}  # a map's title, filled by SCRIPT
    sections = []
    steps = [s.token for s in result.steps]
    for kind, english in KIND_NAMES.items():
        name = _(english)
        maps = result.maps(kind)  # (L, H, Q, K)
        L, H = maps.shape[:2]
        data["kinds"][kind] = {"name": name, "figure": _figure(result, kind),
                               "maps": _cells(maps, causal=kind == "dec")}
        sections.append(f'<section id="{kind}"><h2>{name}</h2>\n'
                        f'<p class="caption">{map_caption(kind, steps, names=names, start=result.tgt_tokens[0])}</p>\n'
                        f'<p>{_select(kind, "layer", L)} {_select(kind, "head", H)}</p>\n'
                        f'<div id="{kind}-map" class="map"></div></section>')
    blob = files.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True
                       ).translate(JSON_ESCAPES)  # sorted: a template's keys come in the order it was built
    sentence, translation = html.escape(result.source), html.escape(result.text)
    prov = html.escape(files.dumps(provenance, indent=1, ensure_ascii=False))
    cut = ("<p>" + html.escape(_("The sentence was cut by {n} token(s) to fit the model's positions.").format(
        n=result.truncated)) + "</p>\n" if result.truncated else "")
    words = {k: html.escape(v) for k, v in dict(
        title=_("Inside a Transformer translator"),
        every=_("Every attention map of every layer and head: pick one with the switches above each map. Layers and "
                "heads count from 1; hover a cell for its tokens and weight."),
        trace=_("Decoding trace"),
        greedy=_("Greedy decoding, step by step: the token the decoder read, the one it chose, its probability, the "
                 "entropy of the whole next-token distribution and the most likely candidates."),
        produced=_("What produced this")).items()}
    return f"""<!DOCTYPE html>
<html lang="{language()}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{words["title"]}: {sentence}</title>
<style>{STYLE}</style>
<script>{_plotly_js()}</script>
</head>
<body>
<h1>{words["title"]}</h1>
<p class="sentence" lang="de">{sentence}</p>
<p class="translation">{translation}</p>
{cut}<p class="caption">{words["every"]}</p>
{chr(10).join(sections)}
<section id="trace"><h2>{words["trace"]}</h2>
<p class="caption">{words["greedy"]}</p>
{_trace_table(result)}
</section>
<section id="provenance"><h2>{words["produced"]}</h2>
<pre class="provenance">{prov}</pre>
</section>
<script type="application/json" id="report-data">{blob}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""


COMMAND = """One translation as a single self-contained HTML file, for a slide, a course page or an e-mail.

    python -m viz.report "Ein Hund läuft im Park." --out report.html [--checkpoint DIR] [--device D]

The file holds the sentence and its translation; every attention map (encoder self, decoder self, cross; every
layer and head) as the page draws it, with a layer and a head switch for each kind; the decoding trace (each step's
candidates and their probabilities); and the provenance record (model/export.py). plotly.js is inside the file: it
opens with no network. The same bytes as the page's "Download as an HTML page" (report_html); this command
translates and writes it.

A bad option, an empty sentence, a bad checkpoint or device, or an --out folder that does not exist is one
`error: ...` line and exit status 2, and no file is written.
"""


def main(argv=None):
    """`python -m viz.report`: an error is one line `error: ...` and exit status 2 (model/cli.py's rule)."""
    from model import cli

    return cli.entry_point(write_report)(argv)


def write_report(argv):
    from model import cli  # the command's parser loads with the command, not with the library

    p = cli.Parser(description=COMMAND)
    p.add_argument("sentence", help="one German sentence")
    p.add_argument("--out", required=True, help="the HTML file to write")
    cli.add_checkpoint(p)
    cli.add_device(p)
    args = p.parse_args(argv)
    from model.export import provenance  # after argument parsing: --help stays fast

    out = files.check_output(args.out)  # before the model runs
    translator = cli.load_translator(args)
    text = report_html(translator.translate(args.sentence), provenance(translator),
                       language_names(translator.origin["languages"]))
    files.write_text(out, text)  # whole or not at all: a failure leaves no half page
    return 0


if __name__ == "__main__":
    from model import cli

    cli.run(main)
