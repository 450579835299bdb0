"""Write the exercises as a printable worksheet for a class, and its answer key (docs/contract.md, "Exercises and the
worksheet").

    python -m model.worksheet --out sheet.html [--server URL] [--checkpoint DIR] [--answers FILE.html]

Both are one self-contained HTML file each: inline CSS, no script, nothing fetched, so that they open offline and
print. The only links in them are the exercises' pages and the lesson link, on --server (default
http://localhost:8501, where `streamlit run app.py` answers). The answers are computed from the checkpoint, as the
page's Exercises view computes them: the key of one model is wrong for the other.
"""

import html
import re
from pathlib import Path
from urllib.parse import urlencode

from . import cli, files
from .errors import InputError
from .exercises import exercises, lesson_params, link

DEFAULT_SERVER = "http://localhost:8501"
TITLE = "Inside a Transformer translator: exercises"
# http(s)://host[:port][/path]: a host name or IPv4 address, no user, query or fragment (the sheet appends its own)
SERVER = re.compile(r"https?://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?")

STYLE = """body { font: 16px/1.45 system-ui, sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em;
color: #222; }
h1 { font-size: 1.5em; }
.ex { border: 1px solid #ccc; border-radius: 6px; padding: 0.6em 1em; margin: 1em 0; break-inside: avoid; }
.topic { color: #666; font-size: 0.9em; }
.blank { border-bottom: 1px solid #888; width: 12em; height: 1.6em; }
.hint, .why { color: #444; }
a { word-break: break-all; }
@media print { a { color: #222; } }"""


def page(title: str, body: list[str]) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head>\n<body>\n<h1>{html.escape(title)}</h1>\n" + "\n".join(body)
            + "\n</body></html>\n")


def anchor(url: str) -> str:
    return f'<a href="{html.escape(url)}">{html.escape(url)}</a>'


def heading(ex) -> str:
    return (f"<h2>Exercise {ex.number}</h2><div class=\"topic\">{html.escape(ex.topic)}</div>"
            f"<p>{html.escape(ex.question)}</p>")


def lesson_link(exs, server: str) -> str:
    """The walk from stop 1, guess first, with the exercises' sentence and model."""
    first = exs[0].params if exs else {}
    return server.rstrip("/") + "/?" + urlencode(lesson_params(first.get("s", ""), first.get("model")))


def worksheet_html(exs, server: str, title: str) -> str:
    """The students' sheet: each exercise's question, its choices or a blank, the hint, the link to open."""
    body = [f"<p>Open the lesson first: {anchor(lesson_link(exs, server))}. Then, for each exercise, open its page "
            "and find the answer there.</p>"]
    for ex in exs:
        answer = ("<ul>" + "".join(f"<li>☐ {html.escape(o)}</li>" for o in ex.options) + "</ul>" if ex.options
                  else "<p>Your answer: </p><div class=\"blank\"></div>")
        body.append(f"<div class=\"ex\">{heading(ex)}{answer}<p class=\"hint\">Hint: {html.escape(ex.hint)}</p>"
                    f"<p>Open: {anchor(link(ex, server))}</p></div>")
    return page(title, body)


def answer_key_html(exs, server: str, title: str) -> str:
    """The teacher's key: each exercise's question, its answer (and tolerance) and why, the link to open."""
    body = [f"<p>The answers of the model these exercises were computed from. Lesson link: "
            f"{anchor(lesson_link(exs, server))}</p>"]
    for ex in exs:
        within = f" (right within ±{ex.tolerance:g})" if ex.tolerance else ""
        body.append(f"<div class=\"ex\">{heading(ex)}<p><strong>Answer: {html.escape(ex.answer)}</strong>"
                    f"{html.escape(within)}</p><p class=\"why\">{html.escape(ex.why)}</p>"
                    f"<p>Open: {anchor(link(ex, server))}</p></div>")
    return page(title + ": answer key", body)


def answers_path(out: Path) -> Path:
    """The key's default path: FILE.html -> FILE-answers.html (any other name gets -answers.html added)."""
    name = out.name[:-len(".html")] if out.name.endswith(".html") else out.name
    return out.with_name(name + "-answers.html")


@cli.entry_point
def main(argv=None):
    p = cli.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the worksheet to write (HTML)")
    p.add_argument("--answers", default=None, help="the answer key to write (default: OUT with .html replaced "
                                                   "by -answers.html)")
    p.add_argument("--server", default=DEFAULT_SERVER, help=f"the app's address the links open (default: "
                                                            f"{DEFAULT_SERVER})")
    cli.add_checkpoint(p)
    cli.add_device(p)
    args = p.parse_args(argv)
    if not SERVER.fullmatch(args.server):
        raise InputError(f"--server must be http(s)://host[:port][/path], got {args.server[:80]!r}")
    out = Path(args.out)
    key = Path(args.answers) if args.answers else answers_path(out)
    for path in (out, key):
        if not path.parent.is_dir():  # before the model loads, not after
            raise InputError(f"cannot write {path}: the folder {path.parent} does not exist")
    if out.resolve() == key.resolve():
        raise InputError(f"--answers must differ from --out: both are {out}")
    from .checkpoint import checkpoint_folder

    translator = cli.load_translator(args)
    exs = exercises(translator, checkpoint_folder(args.checkpoint))
    files.write_text(out, worksheet_html(exs, args.server, TITLE))
    files.write_text(key, answer_key_html(exs, args.server, TITLE))
    print(f"{len(exs)} exercises: {out}, answer key {key}")
    return 0


if __name__ == "__main__":
    cli.run(main)
