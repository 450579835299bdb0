"""Write the exercises as a printable worksheet for a class, and its answer key (docs/contract.md, "Exercises and the
worksheet").

    python -m lesson.worksheet --out sheet.html [--server URL] [--checkpoint DIR] [--answers FILE.html]

Both are one self-contained HTML file each: inline CSS, no script, nothing fetched, so that they open offline and
print. The only links in them are the exercises' pages and the lesson link, on --server (default
http://localhost:8501, where `streamlit run app.py` answers). The answers are computed from the checkpoint, as the
page's Exercises view computes them: the key of one model is wrong for the other.
"""

import html
import ipaddress
import re
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from model import files
from model.errors import InputError

from .exercises import exercises, lesson_params, link

DEFAULT_SERVER = "http://localhost:8501"
TITLE = "Inside a Transformer translator: exercises"
# A --server is http(s)://host[:port][/path]: no user, query or fragment (the sheet appends its own).
LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")  # one part of a DNS name (RFC 1123)
PORT = re.compile(r"[0-9]{1,5}")
URL_PATH = re.compile(r"(/[A-Za-z0-9._~/-]*)?")

STYLE = """body { font: 16px/1.45 system-ui, sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em;
color: #222; }
h1 { font-size: 1.5em; }
.ex { border: 1px solid #ccc; border-radius: 6px; padding: 0.6em 1em; margin: 1em 0; break-inside: avoid; }
.topic { color: #666; font-size: 0.9em; }
.blank { border-bottom: 1px solid #888; width: 12em; height: 1.6em; }
.hint, .why { color: #444; }
a { word-break: break-all; }
@media print { a { color: #222; } }"""


def server_fault(url: str) -> str | None:
    """What is wrong with a --server address (None: nothing): http(s)://host[:port][/path], the host a DNS name
    (parts of letters, digits and hyphens, no hyphen at either end) or an IPv4 address, the port 1 to 65535."""
    if not re.fullmatch(r"[!-~]+", url):  # printable ASCII, no space: urlsplit would drop a tab or a newline
        return "holds a space, a control character or a character that is not ASCII"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not url.startswith(f"{parts.scheme}://"):
        return "must start with http:// or https://"
    if "@" in parts.netloc or parts.query or parts.fragment or url.endswith(("?", "#")):
        return "must be http(s)://host[:port][/path], with no user name, query or fragment"
    host, colon, port = parts.netloc.partition(":")
    if colon and not (PORT.fullmatch(port) and 1 <= int(port) <= 65535):
        return f"the port must be a number from 1 to 65535, not {port[:20]!r}"
    labels = host.split(".")
    if all(label.isdigit() for label in labels):  # digits alone: an IPv4 address (no top-level domain is a number)
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return f"the host {host[:80]!r} is not an IPv4 address"
    elif len(host) > 253 or not all(LABEL.fullmatch(label) for label in labels):
        return (f"the host {host[:80]!r} is not a DNS name (parts of letters, digits and hyphens between dots, "
                "no hyphen at either end of a part) or an IPv4 address")
    if not URL_PATH.fullmatch(parts.path):
        return "the path may hold letters, digits and . _ ~ / - only"
    return None


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


def main(argv=None):
    """`python -m lesson.worksheet`: an error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from model import cli

    return cli.entry_point(write_sheets)(argv)


def write_sheets(argv):
    from model import cli

    p = cli.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the worksheet to write (HTML)")
    p.add_argument("--answers", default=None, help="the answer key to write (default: OUT with .html replaced "
                                                   "by -answers.html)")
    p.add_argument("--server", default=DEFAULT_SERVER, help=f"the app's address the links open (default: "
                                                            f"{DEFAULT_SERVER})")
    cli.add_checkpoint(p)
    cli.add_device(p)
    args = p.parse_args(argv)
    fault = server_fault(args.server)
    if fault:
        raise InputError(f"--server {args.server[:80]!r}: {fault}")
    out = Path(args.out)
    key = Path(args.answers) if args.answers else answers_path(out)
    for path in (out, key):
        files.check_output(path)  # before the model loads, not after
    if out.resolve() == key.resolve():
        raise InputError(f"--answers must differ from --out: both are {out}")
    from model.checkpoint import checkpoint_folder

    translator = cli.load_translator(args)
    exs = exercises(translator, checkpoint_folder(args.checkpoint))
    files.write_text(out, worksheet_html(exs, args.server, TITLE))
    files.write_text(key, answer_key_html(exs, args.server, TITLE))
    print(f"{len(exs)} exercises: {out}, answer key {key}")
    return 0


if __name__ == "__main__":
    from model import cli

    cli.run(main)
