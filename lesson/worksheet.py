"""Write the exercises as a printable worksheet for a class, and its answer key (docs/contract.md, "Exercises and the
worksheet").

    python -m lesson.worksheet --out sheet.html [--sentence TEXT] [--exercises 3,7,12] [--server URL]
                               [--checkpoint DIR] [--answers FILE.html] [--lang ko|de|en]

Both are one self-contained HTML file each: inline CSS, no script, nothing fetched, so that they open offline and
print (A4: three exercises take at most two pages). The only links in them are the exercises' pages and the lesson
link, on --server (default http://localhost:8501, where `streamlit run app.py` answers), all with --sentence (default:
the first example sentence). The answers are computed from the checkpoint on that sentence, as the page's Exercises
view computes them: the key of one model, or one sentence, is wrong for another. The hints are on the key only.
"""

import html
import ipaddress
import re
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from model import files
from model.errors import InputError
from model.i18n import LANGUAGES, N_, SOURCE, _, language, speaking

from .exercises import QUESTIONS, chosen, lesson_of, lesson_params, lesson_sentence, link

DEFAULT_SERVER = "http://localhost:8501"
TITLE = N_("Inside a Transformer translator: exercises")
OPEN = N_("Open:")  # before each exercise's link
# A --server is http(s)://host[:port][/path]: no user, query or fragment (the sheet appends its own).
LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")  # one part of a DNS name (RFC 1123)
PORT = re.compile(r"[0-9]{1,5}")
URL_PATH = re.compile(r"(/[A-Za-z0-9._~/-]*)?")

STYLE = """body { font: 16px/1.45 system-ui, sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em;
color: #222; }
h1 { font-size: 1.5em; }
h2 { display: inline; font-size: 1.15em; margin: 0; }
.ex { border: 1px solid #ccc; border-radius: 6px; padding: 0.6em 1em; margin: 1em 0; break-inside: avoid; }
.ex p { margin: 0.4em 0; }
.topic, .reads { color: #666; font-size: 0.9em; }
.options { list-style: none; padding: 0; margin: 0.4em 0; display: flex; flex-wrap: wrap; gap: 0.2em 1.6em; }
.blank { border-bottom: 1px solid #888; width: 12em; height: 1.6em; }
.hint, .why { color: #444; }
a { word-break: break-all; }
@page { size: A4; margin: 14mm 15mm; }
@media print { body { font-size: 10.5pt; max-width: none; margin: 0; padding: 0; } h1 { font-size: 15pt; }
a { color: #222; text-decoration: none; font-size: 8.5pt; } .ex { margin: 0.7em 0; padding: 0.4em 0.8em; } }"""


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
    return (f"<!DOCTYPE html>\n<html lang=\"{language()}\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head>\n<body>\n<h1>{html.escape(title)}</h1>\n" + "\n".join(body)
            + "\n</body></html>\n")


def anchor(url: str) -> str:
    return f'<a href="{html.escape(url)}">{html.escape(url)}</a>'


def heading(ex) -> str:
    reads = ("<p class=\"reads\">" + html.escape(_("The same for every sentence: it reads {what}.").format(
        what=ex.reads)) + "</p>" if ex.reads else "")
    number = html.escape(_("Exercise {n}").format(n=ex.number))
    return (f"<h2>{number}</h2> <span class=\"topic\">· {html.escape(ex.title)} · {html.escape(_(ex.topic))}</span>"
            f"{reads}<p>{html.escape(ex.question)}</p>")


def lesson_link(exs, server: str) -> str:
    """The walk from stop 1, guess first, with the exercises' sentence and model."""
    first = exs[0].params if exs else {}
    return server.rstrip("/") + "/?" + urlencode(lesson_params(first.get("s", ""), first.get("model")))


def about(exs) -> str:
    first = exs[0].params if exs else {}
    return _("the sentence “{sentence}”").format(sentence=first.get("s", ""))


def worksheet_html(exs, server: str, title: str) -> str:
    """The students' sheet: each exercise's question, its choices or a blank, the link to open. No hint, no
    answer: those are the key's."""
    body = ["<p>" + _("The exercises are about {about}. Open the lesson first: {link}. Then, for each exercise, open "
                      "its page and find the answer there.").format(about=html.escape(about(exs)),
                                                                    link=anchor(lesson_link(exs, server))) + "</p>"]
    for ex in exs:
        answer = ("<ul class=\"options\">" + "".join(f"<li>☐ {html.escape(o)}</li>" for o in ex.options) + "</ul>"
                  if ex.options else "<p>" + html.escape(_("Your answer:")) + " </p><div class=\"blank\"></div>")
        body.append(f"<div class=\"ex\">{heading(ex)}{answer}<p>{html.escape(_(OPEN))} "
                    f"{anchor(link(ex, server))}</p></div>")
    return page(title, body)


def answer_key_html(exs, server: str, title: str, skipped=()) -> str:
    """The teacher's key: each exercise's question, its answer (and tolerance), the hint and why, the link to open;
    then the exercises this sentence could not carry (Skipped), and why."""
    body = ["<p>" + _("The answers of the model these exercises were computed from, on {about}. Lesson link: {link}")
            .format(about=html.escape(about(exs)), link=anchor(lesson_link(exs, server))) + "</p>"]
    for ex in exs:
        within = " " + _("(right within ±{tolerance:g})").format(tolerance=ex.tolerance) if ex.tolerance else ""
        answer, hint = _("Answer: {answer}").format(answer=ex.answer), _("Hint: {hint}").format(hint=ex.hint)
        body.append(f"<div class=\"ex\">{heading(ex)}<p><strong>{html.escape(answer)}</strong>"
                    f"{html.escape(within)}</p><p class=\"hint\">{html.escape(hint)}</p>"
                    f"<p class=\"why\">{html.escape(ex.why)}</p><p>{html.escape(_(OPEN))} "
                    f"{anchor(link(ex, server))}</p></div>")
    body += ["<p class=\"reads\">" + html.escape(_("Left out for this sentence: exercise {n} ({title}), {reason}.")
                                                 .format(n=sk.number, title=sk.title, reason=sk.reason)) + "</p>"
             for sk in skipped]
    return page(_("{title}: answer key").format(title=title), body)


def exercise_numbers(text: str) -> list[int]:
    """The numbers of --exercises ("3,7,12": exercises as the page numbers them, from 1), in the walk's order;
    InputError for anything else: an empty item, a number that is no exercise, one listed twice."""
    items = [item.strip() for item in text.split(",")]
    bad = next((item for item in items if not re.fullmatch(r"[0-9]{1,3}", item)), None)
    if bad is not None:
        raise bad_list(text, f"{bad[:20]!r} is not an exercise number" if bad else "an item is empty")
    numbers = [int(item) for item in items]
    outside = [n for n in numbers if not 1 <= n <= len(QUESTIONS)]
    if outside:
        raise bad_list(text, f"there is no exercise {outside[0]}: the exercises are 1 to {len(QUESTIONS)}")
    twice = [n for n in numbers if numbers.count(n) > 1]
    if twice:
        raise bad_list(text, f"exercise {twice[0]} is listed twice")
    return sorted(numbers)


def bad_list(text: str, fault: str) -> InputError:
    return InputError(f"--exercises {text[:80]!r}: {fault} (give numbers from 1 to {len(QUESTIONS)} between commas, "
                     "e.g. 3,7,12)")


def answers_path(out: Path) -> Path:
    """The key's default path: FILE.html -> FILE-answers.html (any other name gets -answers.html added)."""
    name = out.name[:-len(".html")] if out.name.endswith(".html") else out.name
    return out.with_name(name + "-answers.html")


def main(argv=None):
    """`python -m lesson.worksheet`: an error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from model import cli

    return cli.entry_point(write_sheets)(argv)


def parser():
    from model import cli

    p = cli.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the worksheet to write (HTML)")
    p.add_argument("--answers", default=None, help="the answer key to write (default: OUT with .html replaced "
                                                   "by -answers.html)")
    p.add_argument("--server", default=DEFAULT_SERVER, help=f"the app's address the links open (default: "
                                                            f"{DEFAULT_SERVER})")
    p.add_argument("--sentence", default=None, help="the German sentence the exercises ask about (default: the "
                                                    "first example sentence, the page's first)")
    p.add_argument("--exercises", default=None, help="the exercises to put on the sheet, by number as the page "
                                                     "shows them (e.g. 3,7,12; default: every one the sentence "
                                                     "can carry)")
    p.add_argument("--lang", default=SOURCE, choices=list(LANGUAGES), help="the language of the sheet and its key "
                                                                           "(default: en)")
    cli.add_checkpoint(p)
    cli.add_device(p)
    return p


def checked_paths(args) -> tuple[Path, Path]:
    """The sheet's and the key's paths, checked before the model loads, not after."""
    out = Path(args.out)
    key = Path(args.answers) if args.answers else answers_path(out)
    for path in (out, key):
        files.check_output(path)
    if out.resolve() == key.resolve():
        raise InputError(f"--answers must differ from --out: both are {out}")
    return out, key


def write_sheets(argv):
    from model import cli
    from model.checkpoint import checkpoint_folder

    args = parser().parse_args(argv)
    fault = server_fault(args.server)
    if fault:
        raise InputError(f"--server {args.server[:80]!r}: {fault}")
    numbers = None if args.exercises is None else exercise_numbers(args.exercises)
    sentence = lesson_sentence() if args.sentence is None else args.sentence
    if not sentence.strip():
        raise InputError("--sentence is empty: give a German sentence")
    out, key = checked_paths(args)
    with speaking(args.lang):
        lesson = lesson_of(cli.load_translator(args), checkpoint_folder(args.checkpoint), sentence)
        exs = lesson.exercises if numbers is None else chosen(lesson, numbers)
        files.write_text(out, worksheet_html(exs, args.server, _(TITLE)))
        files.write_text(key, answer_key_html(exs, args.server, _(TITLE), lesson.skipped))
    left_out = "".join(f"; left out: exercise {sk.number} ({sk.title}), {sk.reason}" for sk in lesson.skipped)
    print(f"{len(exs)} exercises: {out}, answer key {key}{left_out}")
    return 0


if __name__ == "__main__":
    from model import cli

    cli.run(main)
