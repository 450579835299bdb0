"""The page in Korean and German in a real browser: the browser's own language opens it in that language, the 🌐
switch changes it and keeps the page's state, Hangul is drawn with a font that has it (Chromium's own report of the
fonts that drew a node), German's long words overflow no box at a phone's width, and the decoding trace, drawn in the
browser, speaks the page's language too. Every expected string is the catalogue's translation of the English one."""

import re
from urllib.parse import urlencode

import pytest

from appserver import pick_view, wait_idle
from model.i18n import catalogue
from views.registry import VIEWS
from views.walk import STOPS

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SENTENCE = "Zwei Männer spielen Fußball auf einer Wiese."
HANGUL_FONTS = ("CJK", "Nanum", "Baekmuk", "UnDotum", "UnBatang", "Malgun", "Apple SD Gothic")
OVERFLOW_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const found = [];
  if (main.scrollWidth > main.clientWidth + 1) found.push(['the page', main.scrollWidth, main.clientWidth]);
  for (const b of main.querySelectorAll('button, label, h1, h2, h3, h4, p, li')) {
    if (!b.getClientRects().length || b.closest('.js-plotly-plot, pre, code, [data-testid="stCode"], .table')) continue;
    if (b.scrollWidth > b.clientWidth + 1 && !['auto', 'scroll'].includes(getComputedStyle(b).overflowX))
      found.push([b.tagName, b.textContent.slice(0, 50), b.scrollWidth, b.clientWidth]);
  }
  return found;
}"""


def said(lang: str, english: str) -> str:
    text = catalogue(lang).gettext(english)
    assert text != english, f"{english!r} is not translated into {lang}"
    return text


def opened(browser, server, params: dict, width: int = 1400, height: int = 1600, **context):
    ctx = browser.new_context(viewport={"width": width, "height": height}, **context)
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(server + "/?" + urlencode(params))
    return ctx, pg, errors


def fonts_drawing(pg, selector: str) -> list[str]:
    """The platform fonts Chromium drew the first node matching `selector` with (DevTools' CSS domain)."""
    cdp = pg.context.new_cdp_session(pg)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    assert node, f"no node {selector}"
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    return [f["familyName"] for f in fonts if f["glyphCount"] > 0]


@pytest.mark.parametrize("width", [1400, 390])
def test_korean_is_drawn_with_a_font_that_has_hangul(browser, server, width):
    ctx, pg, errors = opened(browser, server, {"s": SENTENCE, "view": "walk", "stop": "1", "lang": "ko"}, width)
    title = said("ko", STOPS[0].title)
    pg.get_by_text(title).wait_for(timeout=60_000)
    wait_idle(pg, 60_000)
    pg.evaluate("t => [...document.querySelectorAll('h4')].find(h => h.textContent.includes(t))"
                ".setAttribute('data-probe', '1')", title)
    fonts = fonts_drawing(pg, "[data-probe='1']")
    assert any(name in font for font in fonts for name in HANGUL_FONTS), fonts
    ctx.close()
    assert not errors, errors


def test_the_browsers_language_opens_the_page_in_it_and_the_link_says_so(browser, server):
    ctx, pg, errors = opened(browser, server, {"s": SENTENCE, "view": "walk", "stop": "2"}, locale="de-DE")
    pg.get_by_text(said("de", STOPS[1].title)).wait_for(timeout=60_000)
    pg.wait_for_function("() => new URLSearchParams(location.search).get('lang') === 'de'", timeout=30_000)
    assert pg.get_by_text(said("de", "Inside a Transformer translator")).count() >= 1
    ctx.close()
    assert not errors, errors


def test_the_switch_changes_the_language_and_keeps_the_walks_place(browser, server):
    ctx, pg, errors = opened(browser, server, {"s": SENTENCE, "view": "walk", "stop": "4"}, locale="en-US")
    pg.get_by_text(STOPS[3].title).wait_for(timeout=60_000)
    wait_idle(pg, 60_000)
    pg.get_by_role("radio", name="한국어").or_(pg.get_by_role("button", name="한국어")).first.click()
    pg.get_by_text(said("ko", STOPS[3].title)).wait_for(timeout=60_000)
    pg.wait_for_function("() => { const p = new URLSearchParams(location.search); return p.get('lang') === 'ko' "
                         "&& p.get('stop') === '4' && p.get('view') === 'walk' }", timeout=30_000)
    wait_idle(pg, 60_000)
    pg.get_by_role("button", name=said("ko", "Next ▸")).click()  # the walk goes on, in Korean
    pg.get_by_text(said("ko", STOPS[4].title)).wait_for(timeout=60_000)
    pg.wait_for_function("() => new URLSearchParams(location.search).get('stop') === '5'", timeout=30_000)
    ctx.close()
    assert not errors, errors


def test_german_overflows_no_box_at_a_phones_width(browser, server):
    ctx, pg, errors = opened(browser, server, {"s": SENTENCE, "view": "walk", "stop": "6", "lang": "de"}, 390, 844)
    pg.get_by_text(said("de", STOPS[5].title)).wait_for(timeout=60_000)
    wait_idle(pg, 60_000)
    pg.wait_for_timeout(500)
    wide = pg.evaluate(OVERFLOW_JS)
    assert not wide, wide
    ctx.close()
    assert not errors, errors


def test_the_decoding_trace_drawn_in_the_browser_speaks_korean(browser, server, translator):
    ctx, pg, errors = opened(browser, server, {"s": SENTENCE, "view": "trace", "step": "2", "lang": "ko"})
    pg.locator(".explorer-trace[data-ready]").wait_for(timeout=60_000)
    box = pg.locator(".explorer-trace")
    assert box.get_by_role("button", name=said("ko", "Next ▶")).count() == 1
    n = len(translator.translate(SENTENCE).steps)
    assert said("ko", "Step {step} of {n}.").format(step=2, n=n) in box.inner_text()
    assert "Output so far" not in box.inner_text() and said("ko", "Output so far:") in box.inner_text()
    ctx.close()
    assert not errors, errors


# What the sweep reads of a page: every visible text of the main area but the model's own words (the translation,
# token chips, tables of tokens and numbers, code, the sentence boxes), with quoted words (a token or an output,
# “...”) left out; and the charts' titles, axis titles and legend entries. English is told by its function words,
# none of which German or Korean uses as a word: two in one text mark a sentence of English. Text in a language of its
# own (an element with lang=, as the training sentences are) and the paper's title are the data's, not the page's.
SWEEP_JS = """() => {
  const skip = '.translation, .chip, code, pre, textarea, input, [data-testid="stTable"], [data-testid="stDataFrame"],'
             + '[data-testid="stCode"], [data-testid="InputInstructions"], .js-plotly-plot, .explorer .table';
  const main = document.querySelector('[data-testid="stMain"]');
  const texts = [];
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    if (!el || el.closest(skip) || !el.getClientRects().length) continue;
    const own = el.closest('[lang]');  // text in a language of its own, inside the page (the html element has one too)
    if (own && main.contains(own)) continue;
    const t = walker.currentNode.textContent.trim();
    if (t) texts.push(t);
  }
  for (const gd of main.querySelectorAll('.js-plotly-plot')) {
    const L = gd.layout || {};
    const title = (x) => (x && (typeof x === 'string' ? x : x.text)) || '';
    texts.push(title(L.title), ...Object.keys(L).filter((k) => /^[xy]axis/.test(k)).map((k) => title(L[k].title)));
    for (const trace of gd.data || []) if (trace.showlegend !== false && trace.name) texts.push(trace.name);
  }
  return texts.filter((t) => t);
}"""
ENGLISH = {"the", "of", "and", "is", "are", "with", "for", "from", "this", "that", "its", "each", "which", "what",
           "by", "than", "when", "where", "were", "has", "have", "it", "to", "on", "or", "be", "not", "you",
           "your", "into", "only", "how", "who", "why"}


def english(texts: list[str]) -> list[str]:
    """The texts that hold a sentence of English: two of its function words, once quoted words are left out."""
    found = []
    for text in texts:
        bare = re.sub(r"[“„][^“”]*[”“]|\"[^\"]*\"|[‘‚][^‘’]*[’‘]|<[^>]*>|Attention [Ii]s All You Need", " ", text)
        words = re.findall(r"[A-Za-z]+", bare)
        if sum(w.lower() in ENGLISH for w in words) >= 2:
            found.append(text[:120])
    return found


def view_texts(pg, slug: str, lang: str, server: str | None = None) -> list[str]:
    """The texts SWEEP_JS reads on a view: opened by its link on `server` (a page load), or else picked on the page's
    switch as a reader of that language does (a run, no page load: a third of the browser's work per view)."""
    if server:
        pg.goto(server + "/?" + urlencode({"s": SENTENCE, "view": slug, "lang": lang}))
    else:
        pick_view(pg, VIEWS[slug].label, 60_000, lang)
        pg.wait_for_function("v => new URLSearchParams(location.search).get('view') === v", arg=slug, timeout=60_000)
    pg.locator(".st-key-view_box").wait_for(timeout=120_000)
    wait_idle(pg, 240_000)
    pg.wait_for_timeout(300)
    wait_idle(pg, 240_000)
    return pg.evaluate(SWEEP_JS)


def test_the_sweep_finds_english_where_it_is():
    """The detector's own known answers: an English sentence is found, a German or Korean one and a quoted output
    are not."""
    assert english(["Each head looks at every token of the sentence.", "the answer"]) == \
        ["Each head looks at every token of the sentence."]
    assert english(["Jeder Kopf schaut auf jedes Token des Satzes.", "각 헤드는 문장의 모든 토큰을 봅니다.",
                    "번역: “Two men are playing soccer on the grass.”"]) == []




@pytest.mark.parametrize("lang, width", [("ko", 1400), ("ko", 390), ("de", 1400), ("de", 390)])
def test_every_view_says_nothing_in_english_and_fits(browser, server, lang, width):
    """Every view of the page in Korean or German, the first opened by a link in that language and each other picked
    on the switch: no sentence of the interface left in English (the model's output and tokens aside), and at a
    phone's width no text wider than its box (German's long words). The same sweep of the English page finds plenty,
    so it can fail. (Each view opened by its own link is test_deploy's policy sweep.)"""
    ctx, pg, errors = opened(browser, server, {"s": SENTENCE, "view": "walk", "lang": lang}, width, 900)
    left, wide = {}, {}
    for slug in VIEWS:
        found = english(view_texts(pg, slug, lang))
        if found:
            left[slug] = found[:4]
        if width < 640 and (over := pg.evaluate(OVERFLOW_JS)):
            wide[slug] = over[:4]
    assert english(view_texts(pg, "walk", "en", server)), "the sweep found no English on the English page"
    ctx.close()
    assert not left, "\n".join(f"{slug}: {found}" for slug, found in left.items())
    assert not wide, "\n".join(f"{slug}: {found}" for slug, found in wide.items())
    assert not errors, errors
