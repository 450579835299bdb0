"""A public classroom server against a hostile visitor: raw WebSocket messages, crafted links, typed and pasted
text. Each test here failed on the code before the fix it guards."""

import pytest


SHORTCODES = ":material/lock: :smile: :red[rot]"


HOSTILE_SENTENCE = ("Ein Hund [Anmelden](https://evil.example/login) ![x](https://evil.example/x.png) läuft $zq^7$ "
                    "**fett** `code` https://evil.example ~~weg~~ <b>b</b> info@evil.example.")
# HTML that would run a script if the page ever took a sentence as HTML (it was tests/browser/test_browser.py's own).
HOSTILE_HTML = '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> Ein Hund'


@pytest.mark.slow
def test_a_hostile_link_renders_as_text_on_every_view_in_chromium(browser, server):
    """In a real browser, each view once with one sentence of every hostile kind (HOSTILE_SENTENCE, then
    HOSTILE_HTML): the link's note and the sentence's chips, translation and tables on every view show the hostile
    text as text, and the HTML makes no element and runs no script. Before the fix the note rendered a live link to
    another site (phishing inside the app's own warning), and the chips linked the address and ran KaTeX."""
    from urllib.parse import urlencode

    from appserver import pick_view, wait_idle
    from browser.test_browser import ARTIFACTS
    from conftest import fresh_page
    from views.registry import VIEWS

    url = f"{server}/?" + urlencode({"s": f"{HOSTILE_SENTENCE} {HOSTILE_HTML}",
                                     "view": "[Anmelden](https://evil.example/login)",
                                     "layer": "![x](https://evil.example/x.png)", "model": SHORTCODES})
    ctx, pg, errors = fresh_page(browser, url)
    try:
        note = pg.locator("[data-testid='stAlert']").filter(has_text="Parts of this link were not used")
        assert "view='[Anmelden](https://evil.example/l" in note.inner_text().replace("\u2060", "")  # as typed
        assert f"model={SHORTCODES!r}" in note.inner_text().replace("\u2060", "")  # no emoji, icon or colour
        assert note.locator("[data-testid='stIconMaterial'], span[style*='color']").count() == 0
        for view in VIEWS.values():  # the switch names each view by its label
            pick_view(pg, view.label)
            wait_idle(pg)
            found = pg.evaluate("""() => ({
                links: [...document.querySelectorAll('a[href]')].map(a => new URL(a.href))
                    .filter(u => u.hostname.includes('evil') || u.protocol === 'mailto:').map(String),
                images: [...document.querySelectorAll('img')].map(i => i.src).filter(s => s.includes('evil')),
                math: [...document.querySelectorAll('.katex annotation')].filter(a => a.textContent.includes('zq')).length,
                bold: [...document.querySelectorAll('.chip strong, .chip b, .chip code, .chip del')].length,
                picker: [...document.querySelectorAll('[data-testid="stButtonGroup"] :is(del, s, strong, em, code)')]
                    .length,
                pwned: window.__pwned ?? null, x: document.querySelectorAll("img[src='x']").length,
                scripts: [...document.querySelectorAll('script')].filter(s => s.textContent.includes('__pwned'))
                    .length})""")
            assert found == {"links": [], "images": [], "math": 0, "bold": 0, "picker": 0, "pwned": None, "x": 0,
                             "scripts": 0}, (view.label, found)
            if view.slug == "cross":
                ARTIFACTS.mkdir(exist_ok=True)
                pg.screenshot(path=str(ARTIFACTS / "hostile.png"), full_page=True)
        chips = pg.locator(".chip").all_inner_texts()
        assert "fett" in chips and "script" in chips, chips  # shown as text
    finally:
        ctx.close()
    assert not errors, errors
