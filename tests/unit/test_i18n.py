"""The page's languages (model/i18n.py, locales/): every marked string of the code is in the catalogues and translated
in Korean and German with the same placeholders, code spans and emphasis; the compiled catalogues are the .po files'
own; the glossary's terms are used the same way everywhere; the language belongs to one run."""

import ast
import csv
import io
import json
import re
import string
import threading
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from model import i18n

ROOT = Path(__file__).resolve().parents[2]
LOCALES = ROOT / "locales"
TRANSLATED = [lang for lang in i18n.LANGUAGES if lang != i18n.SOURCE]
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2)}  # docs/i18n.md's extraction command: -k N_ -k ngettext:1,2
METHOD_MAP = [(pattern, "python") for pattern in ("app.py", "model/**.py", "views/**.py", "viz/**.py",
                                                  "lesson/**.py")]


def catalogue(lang: str):
    with open(LOCALES / lang / "LC_MESSAGES" / "messages.po", "rb") as f:
        return read_po(f, locale=lang)


def messages(cat):
    """(msgid, msgstr) pairs of a catalogue, the header left out; a plural's forms each against its own msgid."""
    for m in cat:
        if not m.id:
            continue
        if isinstance(m.id, tuple):
            strs = m.string if isinstance(m.string, tuple) else (m.string,)
            for k, s in enumerate(strs):
                yield m, m.id[min(k, 1)], s
        else:
            yield m, m.id, m.string


def code_strings() -> set:
    """Every string the code marks, extracted as the catalogues' command extracts them."""
    found = set()
    for _path, _line, msg, _comments, _context in extract_from_dir(str(ROOT), METHOD_MAP, keywords=KEYWORDS):
        found.add(msg if isinstance(msg, str) else tuple(msg))
    return found


def test_the_catalogues_hold_every_string_of_the_code_and_no_other():
    code = code_strings()
    assert len(code) > 100, "the extraction found almost nothing: is the method map right?"
    with open(LOCALES / "messages.pot", "rb") as f:
        template = {m.id for m in read_po(f) if m.id}
    assert not code - template, f"strings missing from locales/messages.pot (docs/i18n.md): {sorted(code - template)[:5]}"
    assert not template - code, f"strings no longer in the code: {sorted(template - code)[:5]}"
    for lang in TRANSLATED:
        ids = {m.id for m in catalogue(lang) if m.id}
        assert ids == template, f"{lang}: run docs/i18n.md's update ({len(template - ids)} missing)"


FIELD = re.compile(r"\{[^{}]*\}")


def fields(text: str) -> list:
    """The str.format fields of a message, with their conversions and specs ({size:,}), sorted."""
    return sorted((name, spec, conv) for _lit, name, spec, conv in string.Formatter().parse(text) if name is not None)


def spans(text: str) -> list:
    """What a translation must carry over unchanged: `code`, <tags> and the count of ** emphasis markers."""
    return sorted(re.findall(r"`[^`]*`", text)) + sorted(re.findall(r"<[^<>]*>", text)) + [text.count("**")]


@pytest.mark.parametrize("lang", TRANSLATED)
def test_every_string_is_translated_with_the_same_placeholders(lang):
    cat = catalogue(lang)
    untranslated, fuzzy, unlike = [], [], []
    for m, msgid, msgstr in messages(cat):
        if not msgstr:
            untranslated.append(msgid)
            continue
        if m.fuzzy:
            fuzzy.append(msgid)
        try:
            same = fields(msgid) == fields(msgstr) and spans(msgid) == spans(msgstr)
        except ValueError:  # a brace that str.format cannot read
            same = False
        if not same:
            unlike.append((msgid, msgstr))
    assert not untranslated, f"{lang}: {len(untranslated)} strings not translated, such as {untranslated[:3]}"
    assert not fuzzy, f"{lang}: fuzzy (to check) {fuzzy[:3]}"
    assert not unlike, f"{lang}: placeholders, code or markup differ: {unlike[:3]}"


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_compiled_catalogues_are_the_po_files_own(lang):
    """locales/LANG/LC_MESSAGES/messages.mo is what compiling its .po gives (docs/i18n.md's compile command)."""
    compiled = io.BytesIO()
    write_mo(compiled, catalogue(lang))
    compiled.seek(0)
    fresh = i18n.gettext.GNUTranslations(compiled)
    shipped = i18n.catalogue(lang)
    assert fresh._catalog == shipped._catalog, f"{lang}: run docs/i18n.md's compile command"


def glossary() -> list[dict]:
    with open(LOCALES / "glossary.csv", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def english_forms(term: str) -> re.Pattern:
    """The term and its plural as whole words ("head", "heads"; "query", "queries")."""
    stem = re.escape(term[:-1]) + "(?:y|ies)" if term.endswith("y") else re.escape(term) + "s?"
    return re.compile(rf"(?<![\w-]){stem}(?![\w-])", re.I)


def test_the_glossary_names_each_term_in_three_languages():
    rows = glossary()
    assert len(rows) >= 20
    for row in rows:
        assert row["en"] and row["ko"] and row["de"] and row["checked"] in ("yes", "no"), row
        assert re.search("[\uac00-\ud7a3]", row["ko"]), f"{row['en']}: the Korean term is not in Hangul"


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_glossary_terms_are_used_the_same_way_everywhere(lang):
    """A message that uses a checked term of the field in English uses the glossary's term in its translation."""
    missing = []
    for row in (r for r in glossary() if r["checked"] == "yes"):
        pattern, accepted = english_forms(row["en"]), row[lang].split("|")
        for _m, msgid, msgstr in messages(catalogue(lang)):
            text = re.sub(r"`[^`]*`|\{[^{}]*\}|Attention [Ii]s All You Need", "", msgid)  # never translated: code,
            # placeholders, and the paper's title
            if msgstr and pattern.search(text) and not any(a.lower() in msgstr.lower() for a in accepted):
                missing.append(f"{row['en']} -> {accepted[0]}: {msgstr[:60]!r}")
    assert not missing, f"{lang}: {len(missing)} translations without the glossary's term, such as {missing[:4]}"


def test_a_known_translation_and_the_source_language():
    with i18n.speaking("de"):
        german = i18n._("Model")
    with i18n.speaking("en"):
        english = i18n._("Model")
    assert english == "Model" and german == next(s for _m, i, s in messages(catalogue("de")) if i == "Model")
    assert german != english


def test_a_count_picks_its_form_one_against_two():
    """The familiarity note's counts: the verb agrees with one word or piece against two, in German and English (it
    read "1 seiner 5 Wörter kamen" and "1 of its 5 pieces are")."""
    words = "{n} of its {total} words never occurred in training ({words})"
    pieces = ("{n} of its {total} pieces is not in the model's vocabulary ({words})",
              "{n} of its {total} pieces are not in the model's vocabulary ({words})")
    said = {}
    for lang in ("de", "en"):
        with i18n.speaking(lang):
            said[lang] = [(i18n.ngettext(words, words, n), i18n.ngettext(*pieces, n)) for n in (1, 2)]
    (w1, p1), (w2, p2) = said["de"]
    assert " kam " in w1 and " kamen " in w2 and " ist " in p1 and " sind " in p2
    assert said["en"] == [(words, pieces[0]), (words, pieces[1])]


def test_the_language_belongs_to_one_thread_and_one_block():
    seen = {}

    def run(lang):
        i18n.use(lang)
        seen[lang] = i18n._("Model")

    threads = [threading.Thread(target=run, args=(lang,)) for lang in i18n.LANGUAGES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen.values())) == len(i18n.LANGUAGES)  # each thread its own language
    assert i18n.language() == i18n.SOURCE  # and this thread untouched
    with i18n.speaking("ko"):
        assert i18n.language() == "ko"
    assert i18n.language() == i18n.SOURCE
    with pytest.raises(ValueError, match="no catalogue"):
        i18n.use("fr")


@pytest.mark.parametrize("accepted, lang", [("ko-KR", "ko"), ("de", "de"), ("de_AT", "de"), ("en-US", "en"),
                                            ("fr-FR", "en"), (None, "en"), ("", "en"), ("KO", "ko")])
def test_the_browser_language_picks_a_catalogue_or_english(accepted, lang):
    assert i18n.best_match(accepted) == lang


def test_no_module_that_translates_reuses_the_name_of_the_translating_function():
    """`_` is the translating function wherever model.i18n's is imported: no loop or unpacking there rebinds it."""
    paths = [ROOT / "app.py"] + [p for d in ("model", "views", "viz", "lesson") for p in sorted((ROOT / d).glob("*.py"))]
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = any(isinstance(n, ast.ImportFrom) and n.module in ("model.i18n", "i18n")
                      and any(a.name == "_" for a in n.names) for n in ast.walk(tree))
        rebound = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "_"
                   and isinstance(n.ctx, ast.Store)]
        assert not (imports and rebound), f"{path.name} rebinds _ at lines {rebound}"


def test_no_string_is_marked_inside_an_f_string():
    """Babel reads an f-string as one token on Python 3.11: a _("...") inside its braces never reaches the
    catalogues, so the page would show it in English whatever the language."""
    paths = [ROOT / "app.py"] + [p for d in ("model", "views", "viz", "lesson") for p in sorted((ROOT / d).glob("*.py"))]
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                found += [f"{path.name}:{n.lineno}" for n in ast.walk(node) if isinstance(n, ast.Call)
                          and isinstance(n.func, ast.Name) and n.func.id in KEYWORDS and n.args
                          and isinstance(n.args[0], ast.Constant)]
    assert not found, f"marked strings inside f-strings: {found}"


def js_said() -> list[str]:
    """Every text views/*.js says through Explorer.say: its string literal (pieces joined by +), comments left out."""
    found = []
    for path in sorted((ROOT / "views").glob("*.js")):
        source = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
        for m in re.finditer(r'say\(\s*((?:"(?:[^"\\]|\\.)*"\s*\+?\s*)+)', source):
            found.append("".join(json.loads(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', m.group(1))))
    return found


def test_the_browser_drawn_views_say_only_what_the_page_sends_them_translated():
    """Each text the scripts say is in views/instant.py JS_WORDS (so in the catalogues), and JS_WORDS holds none they
    no longer say; the scripts say nothing a person reads as a bare English literal in a label, title or button."""
    from views.instant import JS_WORDS

    said = js_said()
    assert len(said) > 30
    assert set(said) == set(JS_WORDS), (set(said) ^ set(JS_WORDS))
    for path in sorted((ROOT / "views").glob("*.js")):
        source = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
        bare = re.findall(r'(?:textContent: |radios\(|tableSwitch\(|htmlTable\()"[A-Za-z]', source)
        assert not bare, f"{path.name} writes English a person reads without Explorer.say: {bare}"


def test_a_kept_function_speaks_the_language_of_the_run_that_kept_it():
    """A download's file is made when clicked, in a thread of its own: it is made in the page's language."""
    with i18n.speaking("ko"):
        later = i18n.kept(lambda: i18n._("Model"))
    made = []
    thread = threading.Thread(target=lambda: made.append(later()))
    thread.start()
    thread.join()
    assert made == [catalogue("ko").get("Model").string] and i18n.language() == i18n.SOURCE


def test_every_marked_string_that_is_formatted_is_given_each_of_its_fields():
    """`_("... {name} ...").format(...)` everywhere in the code: each field of the message is passed by name (or by a
    ** mapping), so no branch of the page, however rarely drawn, fails with a KeyError in any language."""
    missing, checked = [], 0
    paths = [ROOT / "app.py"] + [p for d in ("model", "views", "viz", "lesson") for p in sorted((ROOT / d).glob("*.py"))]
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"):
                continue
            marked = node.func.value
            calls = [marked] if isinstance(marked, ast.Call) else [c for c in (getattr(marked, "body", None),
                                                                            getattr(marked, "orelse", None)) if c]
            for call in calls:
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in KEYWORDS
                        and call.args and isinstance(call.args[0], ast.Constant)):
                    continue
                given = {k.arg for k in node.keywords}
                if None in given or node.args:  # **mapping or positional: not checked here
                    continue
                wanted = {name.split(".")[0].split("[")[0] for name, _s, _c in fields(call.args[0].value)}
                checked += 1
                if wanted - given:
                    missing.append(f"{path.name}:{node.lineno} {sorted(wanted - given)}")
    assert checked > 300 and not missing, (checked, missing)
