"""One translation as a single self-contained HTML file: for a slide, a course page or an e-mail, opened from disk.

    python -m model.report "Ein Hund läuft im Park." --out report.html [--checkpoint DIR] [--device D]

The file holds the sentence and its translation; every attention map (encoder self, decoder self, cross; every
layer and head) as the page draws it, with a layer and a head switch for each kind; the decoding trace (each step's
candidates and their probabilities); and the provenance record (model/export.py). plotly.js is inside the file: it
opens with no network. The same bytes as the page's "Download as an HTML page"; viz/report.py builds it
(`viz.report.report_html`), this command translates and writes it.

A bad option, an empty sentence, a bad checkpoint or device, or an --out folder that does not exist is one
`error: ...` line and exit status 2, and no file is written.
"""

from . import cli, files


@cli.entry_point
def main(argv=None):
    p = cli.Parser(description=__doc__)
    p.add_argument("sentence", help="one German sentence")
    p.add_argument("--out", required=True, help="the HTML file to write")
    cli.add_checkpoint(p)
    cli.add_device(p)
    args = p.parse_args(argv)

    from viz.report import report_html  # after argument parsing: --help stays fast

    from .export import provenance

    out = files.check_output(args.out)  # before the model runs
    translator = cli.load_translator(args)
    text = report_html(translator.translate(args.sentence), provenance(translator))
    files.write_text(out, text)  # whole or not at all: a failure leaves no half page
    return 0


if __name__ == "__main__":
    cli.run(main)
