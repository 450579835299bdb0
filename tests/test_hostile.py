"""A public classroom server against a hostile visitor: raw WebSocket messages, crafted links, typed and pasted
text. Each test here failed on the code before the fix it guards (issue 36)."""

import asyncio
import html
import re

import pytest

from appserver import free_port, start_app, stop_app, until_quiet
from conftest import from_url
from views.state import MAX_SENTENCE, whole_number
from views.widgets import diff_chips, literal, token_chips

# What Markdown, KaTeX or HTML would act on in a text shown on the page.
ACTIVE = set("\\`*_{}[]()#+-.!|~$<>&\"'=")
# What remark-gfm links in text once character references are decoded (mdast-util-gfm-autolink-literal).
ADDRESS = re.compile(r"https?://|www\.|[\w.+-]@[\w-]", re.IGNORECASE)
MARKUP = ["[Anmelden](https://evil.example/login)", "![x](https://evil.example/x.png)", "**fett**", "$x^2$",
          "`code`", "<b>b</b>", "https://evil.example", "~~weg~~", "_kursiv_", "www.evil.example", "info@evil.example",
          "HTTP://EVIL.EXAMPLE", "WWW.evil.example", ":smile:", ":material/lock:", ":red[rot]", ":+1:", ":-1:"]
# What Streamlit's Markdown turns into an emoji, an icon or coloured text once character references are decoded.
SHORTCODE = re.compile(r":[\w/+-]")


def shown_text(markup: str) -> str:
    """What is left of an HTML snippet for Markdown to act on: the text between the tags, less character references."""
    return re.sub(r"&#[0-9]+;|&[a-z]+;", "", re.sub(r"<[^>]*>", "", markup))


@pytest.mark.parametrize("text", MARKUP)
def test_chips_leave_nothing_for_markdown_latex_or_html(text):
    tokens = text.split() + list(text)  # whole, and each character on its own, as spaCy may split it
    for markup in (token_chips(tokens), diff_chips([("same", t) for t in tokens]), literal(text)):
        assert not ACTIVE & set(shown_text(markup)), markup
        assert not ADDRESS.search(html.unescape(re.sub(r"<[^>]*>", "", markup))), markup
        assert not SHORTCODE.search(html.unescape(re.sub(r"<[^>]*>", "", markup))), markup
    assert html.unescape(literal(text)).replace("\u2060", "") == text  # it reads as typed


@pytest.mark.parametrize("raw, low, high, number", [
    ("3", 1, 8, 3), (" 3 ", 1, 8, 3), ("0", 0, 5, 0), ("9", 1, 8, None), ("²", 1, 8, None), ("١", 1, 8, None),
    ("٣", 1, 8, None), ("5" * 5000, 1, 8, None), ("9" * 10, 0, 10**12, None), ("", 1, 8, None), ("+3", 1, 8, None),
    ("-1", -5, 8, None), ("3.0", 1, 8, None), ("0x3", 1, 8, None), ("1_0", 1, 99, None), ("３", 1, 8, None)])
def test_a_link_number_is_ascii_digits_of_bounded_length(raw, low, high, number):
    assert whole_number(raw, low, high) == number


# Every parameter any view reads from a link, each given the same hostile value at once.
LINK_PARAMS = ["layer", "head", "stop", "beam", "step", "query", "at", "off", "vs", "kind", "draw", "values", "whatif",
               "ref", "s2", "stat", "from", "model"]
HOSTILE_VALUES = {"superscript": "²", "arabic_indic": "-١", "5000_digits": "7" * 5000,
                  "markdown": "[Anmelden](https://evil.example/login) **b** $x$", "empty": ""}


def view_slugs() -> list[str]:
    from views.registry import VIEWS
    return [v.slug for v in VIEWS.values()]


@pytest.mark.slow
@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_hostile_link_parameters_on_every_view_are_notes_never_a_crash(monkeypatch, value):
    """Every registered view opened by a link whose every parameter is hostile: the page draws, names what it did
    not use in one note shown as text, and a second run (a reload keeps the session) does not fail either."""
    hostile = HOSTILE_VALUES[value]
    for slug in view_slugs():
        at = from_url(monkeypatch, s="Ein Hund läuft.", view=slug, **{k: hostile for k in LINK_PARAMS})
        assert not at.exception and not at.error, (slug, at.exception, [e.value for e in at.error])
        assert "class='translation'" in "".join(m.value for m in at.markdown), slug
        warnings = [w.value for w in at.warning]
        if value != "empty":
            assert any("Parts of this link were not used" in w for w in warnings), (slug, warnings)
        for w in warnings:
            assert "](https" not in w and "**b**" not in w and "$x$" not in w, (slug, w)
        at.run()
        assert not at.exception and not at.error, slug


@pytest.mark.slow
def test_a_link_that_breaks_its_reader_is_one_note_and_the_page_goes_on(monkeypatch):
    """A reader that fails (a case no check foresaw) costs the link, never the page: the notes are marked read
    first, so the session's next run does not try again."""
    import views.attention

    def broken(*args):
        raise OverflowError("a reader nobody foresaw")

    monkeypatch.setattr(views.attention, "read_link", broken)  # the attention views' reader of their parameters
    at = from_url(monkeypatch, s="Ein Hund läuft.", view="cross")
    assert not at.exception and not at.error
    assert "the link could not be read" in at.warning[0].value
    assert "class='translation'" in "".join(m.value for m in at.markdown)
    at.run()
    assert not at.exception and not at.warning


@pytest.mark.slow
@pytest.mark.parametrize("box, view", [("sentence", "cross"), ("reference", "reference"), ("s2", "cross")])
def test_a_text_over_the_limit_is_cut_and_the_page_says_so(monkeypatch, box, view):
    """A paste (or a client's message) over the box's limit keeps its first MAX_SENTENCE characters, with a note;
    never the megabytes (a 20 MB reference cost 13.6 s of server CPU and stayed in memory)."""
    at = from_url(monkeypatch, s="Ein Hund läuft.", view=view, **({"vs": "sentence"} if box == "s2" else {}))
    long = "Ein Hund läuft. " * 200_000  # 3.2 MB
    at.text_input(key=box).set_value(long).run()
    assert not at.exception and not at.error
    assert at.session_state[box] == long[:MAX_SENTENCE]
    assert any(f"{len(long):,} characters" in w.value and "first 2,000 were kept" in w.value for w in at.warning)
    at.run()  # said once
    assert not any("were kept" in w.value for w in at.warning)


def threads_and_rss(pid: int) -> tuple[int, int]:
    """The process's thread count and resident memory in MB, from /proc."""
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":" in line)
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) // 1024


async def clear_caches_and_rerun(port: int, times: int, query: str):
    """A client without a browser: Streamlit's own protocol over /_stcore/stream, a run of the page for a link, then
    `times` x (clear_cache, run again)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from tornado.websocket import websocket_connect

    ws = await websocket_connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"])

    async def send(**fields):
        msg = BackMsg()
        for name, value in fields.items():
            if name == "rerun_script":
                msg.rerun_script.query_string = value
            else:
                setattr(msg, name, value)
        await ws.write_message(msg.SerializeToString(), binary=True)

    async def run():
        await send(rerun_script=query)
        while True:
            out = ForwardMsg()
            out.ParseFromString(await asyncio.wait_for(ws.read_message(), 120))
            if out.WhichOneof("type") == "script_finished":
                return

    await run()
    yield
    for _ in range(times):
        await send(clear_cache=True)
        await run()
    ws.close()
    yield


@pytest.mark.slow
def test_clear_cache_messages_leave_memory_and_threads_flat():
    """Any client can send `clear_cache` (the page hides the menu item, the server takes the message). Before the
    fix each one stranded a model and its batching thread: 8 messages took a server from 7 threads and 454 MB to
    15 threads and 763 MB. Now the model is the server's own: 20 messages, each followed by a run that translates."""
    port = free_port()
    proc = start_app(port)
    try:
        steps = clear_caches_and_rerun(port, 20, "s=Ein+Hund+l%C3%A4uft+durch+den+Schnee.")

        async def drive():
            await anext(steps)
            until_quiet(proc.pid)  # the first run's last work done: what follows is the messages' alone
            before = threads_and_rss(proc.pid)
            await anext(steps)
            return before, threads_and_rss(proc.pid)

        (threads_before, rss_before), (threads_after, rss_after) = asyncio.run(drive())
    finally:
        stop_app(proc)
    assert threads_after <= threads_before + 1, (threads_before, threads_after)
    assert rss_after - rss_before < 60, (rss_before, rss_after)


SHORTCODES = ":material/lock: :smile: :red[rot]"
HOSTILE_SENTENCE = ("Ein Hund [Anmelden](https://evil.example/login) ![x](https://evil.example/x.png) läuft $zq^7$ "
                    "**fett** `code` https://evil.example ~~weg~~ <b>b</b> info@evil.example.")


@pytest.mark.slow
def test_a_hostile_link_renders_as_text_on_every_view_in_chromium(browser, server):
    """In a real browser: the link's note and the sentence's chips, translation and tables on every view show the
    hostile text as text. Before the fix the note rendered a live link to another site (phishing inside the app's
    own warning), and the chips linked the address and ran KaTeX."""
    from urllib.parse import urlencode

    from appserver import wait_idle
    from conftest import fresh_page
    from views.registry import VIEWS

    url = f"{server}/?" + urlencode({"s": HOSTILE_SENTENCE, "view": "[Anmelden](https://evil.example/login)",
                                     "layer": "![x](https://evil.example/x.png)", "model": SHORTCODES})
    ctx, pg, errors = fresh_page(browser, url)
    try:
        note = pg.locator("[data-testid='stAlert']").filter(has_text="Parts of this link were not used")
        assert "view='[Anmelden](https://evil.example/l" in note.inner_text().replace("\u2060", "")  # as typed
        assert f"model={SHORTCODES!r}" in note.inner_text().replace("\u2060", "")  # no emoji, icon or colour
        assert note.locator("[data-testid='stIconMaterial'], span[style*='color']").count() == 0
        for label in (view.label for view in VIEWS.values()):  # the switch names each view by its label
            pg.get_by_role("radiogroup", name="View").get_by_role("radio", name=label, exact=True).click()
            wait_idle(pg)
            found = pg.evaluate("""() => ({
                links: [...document.querySelectorAll('a[href]')].map(a => new URL(a.href))
                    .filter(u => u.hostname.includes('evil') || u.protocol === 'mailto:').map(String),
                images: [...document.querySelectorAll('img')].map(i => i.src).filter(s => s.includes('evil')),
                math: [...document.querySelectorAll('.katex annotation')].filter(a => a.textContent.includes('zq')).length,
                bold: [...document.querySelectorAll('.chip strong, .chip b, .chip code, .chip del')].length,
                picker: [...document.querySelectorAll('[data-testid="stButtonGroup"] :is(del, s, strong, em, code)')]
                    .length})""")
            assert found == {"links": [], "images": [], "math": 0, "bold": 0, "picker": 0}, (label, found)
        assert "fett" in pg.locator(".chip").all_inner_texts()
    finally:
        ctx.close()
    assert not errors, errors


@pytest.mark.parametrize("cell", ["-١", "+٣", "-１", "@١", "-1\u0660"])
def test_a_csv_cell_with_non_ascii_digits_is_text_and_neutralised(cell):
    """Python's \\d takes Arabic-Indic and full-width digits: "-١" passed as a number and reached a spreadsheet as a
    formula. Only ASCII digits make a number."""
    from model.export import csv_cell

    assert csv_cell(cell) == "'" + cell
