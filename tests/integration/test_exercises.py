"""The exercises (lesson/exercises.py) and the worksheet (lesson/worksheet.py): every answer is the model's own, found
again here by a second, literal route; every link opens a page state the page reads without a note; the worksheet
holds no script and links only to the server given (docs/contract.md, "Exercises and the worksheet")."""

import html
import json
import re

import pytest
import torch

from conftest import CHECKPOINT, ROOT, assert_one_error_line, run
from lesson.exercises import EXAMPLES, SENTENCE_INDEX, TOPICS, check, exercises, lesson_params, link
from lesson.worksheet import answer_key_html, worksheet_html

SERVER = "http://class.example:8501"
FOLDERS = {"learned": CHECKPOINT, "sinusoidal": CHECKPOINT / "sinusoidal"}


@pytest.fixture(scope="module")
def sheets(shipped_models) -> dict:
    """model slug -> (translator, exercises), for both shipped models."""
    found = {}
    for slug, folder in FOLDERS.items():
        if not (folder / "model.safetensors").is_file():
            pytest.skip(f"no shipped checkpoint in {folder}")
        translator = shipped_models(folder)
        found[slug] = translator, exercises(translator, folder)
    return found


def find(exs, fragment: str):
    return next(ex for ex in exs if fragment in ex.question)


def sentence() -> str:
    return json.loads(EXAMPLES.read_text(encoding="utf-8"))["examples"][SENTENCE_INDEX]["de"]


# --- the sheet's shape, and the judge --------------------------------------------------------------------------------


@pytest.mark.parametrize("slug", FOLDERS)
def test_numbered_in_the_walks_order_covering_every_topic(sheets, slug):
    exs = sheets[slug][1]
    assert len(exs) >= 15
    assert [ex.number for ex in exs] == list(range(1, len(exs) + 1))
    order = [TOPICS.index(ex.topic) for ex in exs]
    assert order == sorted(order) and set(order) == set(range(len(TOPICS)))


@pytest.mark.parametrize("slug", FOLDERS)
def test_choices_hold_their_answer_once_and_the_judge_takes_only_it(sheets, slug):
    for ex in sheets[slug][1]:
        assert all(isinstance(v, str) for v in (*ex.params, *ex.params.values(), *ex.options, ex.answer))
        assert check(ex, ex.answer), ex
        if ex.options:
            assert ex.answer in ex.options and len(set(ex.options)) == len(ex.options) >= 2, ex
            assert ex.tolerance == 0.0
            assert not any(check(ex, o) for o in ex.options if o != ex.answer)


@pytest.mark.parametrize("slug", FOLDERS)
def test_typed_numbers_right_within_the_tolerance_and_wrong_beyond_it(sheets, slug):
    typed = [ex for ex in sheets[slug][1] if not ex.options]
    assert typed
    for ex in typed:
        value = float(ex.answer)
        assert check(ex, f"{value + ex.tolerance * 0.9:.6f}") and check(ex, f" {value - ex.tolerance * 0.9:.6f} ")
        assert check(ex, f"{value:.6f}".replace(".", ","))
        for wrong in (f"{value + ex.tolerance + 0.01:.6f}", f"{value - ex.tolerance - 0.01:.6f}", "abc", "", "1e999",
                      "²", "١", "nan", "inf", "1.2.3", "--1", "1" * 500):
            assert not check(ex, wrong), (ex.question, wrong)
        assert not check(ex, None) and not check(ex, 3.5)  # of a wrong type: False, never an exception


def test_at_least_two_answers_differ_between_the_models(sheets):
    learned, sinusoidal = sheets["learned"][1], sheets["sinusoidal"][1]
    assert [ex.question.split(":")[0] for ex in learned][:3] == [ex.question.split(":")[0] for ex in sinusoidal][:3]
    assert sum(a.answer != b.answer for a, b in zip(learned, sinusoidal)) >= 2
    assert all(ex.params.get("model") == "sinusoidal" for ex in sinusoidal)
    assert all("model" not in ex.params for ex in learned)


# --- second, literal routes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("slug", FOLDERS)
def test_the_previous_token_head_by_a_loop_over_head_stats(sheets, slug):
    grid = json.loads((FOLDERS[slug] / "head_stats.json").read_text())["stats"]["previous_share"]["dec"]
    best, best_value = None, -1.0
    for layer in range(len(grid)):
        for head in range(len(grid[layer])):
            if grid[layer][head] > best_value:
                best, best_value = (layer, head), grid[layer][head]
    ex = find(sheets[slug][1], "previous-token head")
    assert ex.answer == f"Decoder self-attention, layer {best[0] + 1}, head {best[1] + 1}"


@pytest.mark.parametrize("slug", FOLDERS)
def test_the_best_aligning_head_by_a_loop_over_alignment(sheets, slug):
    grid = json.loads((FOLDERS[slug] / "alignment.json").read_text())["heads"]["cross"]
    cells = [(grid[layer][head], layer, head) for layer in range(len(grid)) for head in range(len(grid[layer]))]
    aer, layer, head = min(cells)
    assert find(sheets[slug][1], "aligns best").answer == f"Cross-attention, layer {layer + 1}, head {head + 1}"


@pytest.mark.parametrize("slug", FOLDERS)
def test_the_causal_mask_count_from_torch_tril(sheets, slug):
    translator, exs = sheets[slug]
    T = len(translator.translate(sentence()).steps)
    visible = torch.tril(torch.ones(T, T))
    assert find(exs, "how many decoder inputs can step").answer == str(int(visible[2].sum()))
    assert find(exs, "exactly 0").answer == str(int((visible == 0).sum()))


@pytest.mark.parametrize("slug", FOLDERS)
def test_the_model_read_answers_by_loops(sheets, slug):
    translator, exs = sheets[slug]
    r = translator.translate(sentence())
    assert find(exs, "How many tokens does the encoder read").answer == str(len(r.src_tokens))
    assert find(exs, "What is d_k").answer == str(translator.cfg.d_model // translator.cfg.n_heads)
    probs = [s.prob for s in r.steps]
    lowest = 0
    for i in range(len(probs)):
        if probs[i] < probs[lowest]:
            lowest = i
    assert find(exs, "least sure").answer == str(lowest + 1)
    assert abs(float(find(exs, "probability does the model give its first").answer) - probs[0]) <= 0.005
    share = sum(float(x) for x in translator.contributions(sentence()).source[0])
    assert abs(float(find(exs, "ALTI+, translating").answer) - share) <= 0.005
    lengths = json.loads((ROOT / "assets/train_lengths.json").read_text())["source"]
    longest = 0
    for n in lengths:
        longest = max(longest, int(n))
    assert find(exs, "longest German training sentence").answer == str(longest)


@pytest.mark.parametrize("slug", FOLDERS)
def test_the_most_faithful_method_and_the_costliest_head_by_loops(sheets, slug):
    faith = json.loads((FOLDERS[slug] / "faithfulness.json").read_text())
    best, best_value = None, -1.0
    for method, values in faith["source"].items():
        if method != "random" and values["comprehensiveness"]["mean"] > best_value:
            best, best_value = method, values["comprehensiveness"]["mean"]
    assert find(sheets[slug][1], "most faithful").answer == faith["names"].get(best, best)
    kinds = json.loads((FOLDERS[slug] / "head_importance.json").read_text())["kinds"]
    names = {"enc": "Encoder self-attention", "dec": "Decoder self-attention", "cross": "Cross-attention"}
    lowest, label = 1e9, None
    for kind in ("enc", "dec", "cross"):
        for layer, row in enumerate(kinds[kind]["bleu"]):
            for head, bleu in enumerate(row):
                if bleu < lowest:
                    lowest, label = bleu, f"{names[kind]}, layer {layer + 1}, head {head + 1}"
    assert find(sheets[slug][1], "costs the most BLEU").answer == label


# --- the links: what the page reads, without a note ---------------------------------------------------------------


class Reading(dict):
    """A link's parameters that remember which of them the view asked for."""

    def __init__(self, *args):
        super().__init__(*args)
        self.asked = set()

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.asked.add(key)
        return super().__getitem__(key)


PAGE_KEYS = {"s", "view", "model", "guess", "present"}  # views/state.py reads these for every view


@pytest.mark.parametrize("slug", FOLDERS)
def test_every_link_holds_only_what_its_view_reads(sheets, slug):
    from views.registry import VIEWS
    from views.state import MAX_SENTENCE

    translator, exs = sheets[slug]
    for ex in exs:
        params = Reading(ex.params)
        assert ex.params["view"] in VIEWS and len(ex.params["s"]) <= MAX_SENTENCE
        assert ex.params.get("model", "sinusoidal") == "sinusoidal"
        notes = []
        VIEWS[ex.params["view"]].read(params, translator.cfg, notes)
        assert not notes, (ex.number, notes)
        assert set(ex.params) - PAGE_KEYS <= params.asked, (ex.number, set(ex.params) - params.asked)
    lesson = lesson_params(sentence(), "sinusoidal")
    assert lesson == {"s": sentence(), "view": "walk", "stop": "1", "guess": "1", "model": "sinusoidal"}
    assert "model" not in lesson_params(sentence(), None)


# --- the worksheet ------------------------------------------------------------------------------------------------


def links_in(page: str) -> list[str]:
    return [html.unescape(u) for u in re.findall(r"""(?:href|src)\s*=\s*["']?([^"'\s>]*)""", page, re.I)]


def test_the_worksheet_and_its_key_link_only_to_the_server(sheets):
    exs = sheets["sinusoidal"][1]
    sheet, key = worksheet_html(exs, SERVER, "A <b>title</b>"), answer_key_html(exs, SERVER, "A <b>title</b>")
    for page in (sheet, key):
        assert "<script" not in page.lower() and "<b>title" not in page and "@import" not in page
        assert links_in(page) and all(u.startswith(SERVER + "/?") for u in links_in(page))
        assert all(u.startswith(SERVER) for u in re.findall(r"https?://[^\s\"'<>&]+", html.unescape(page)))
        for ex in exs:
            assert f"Exercise {ex.number}</h2>" in page and html.escape(link(ex, SERVER)) in page
    for ex in exs:
        assert f"Answer: {html.escape(ex.answer)}</strong>" in key and html.escape(ex.why) in key
        assert html.escape(ex.hint) in key and html.escape(ex.hint) not in sheet  # hints on the key only
        assert html.escape(ex.why) not in sheet
        assert all(html.escape(o) in sheet for o in ex.options)


def test_the_command_writes_both_files_and_refuses_a_server_that_is_not_http(tmp_path):
    out = tmp_path / "sheet.html"
    r = run("lesson.worksheet", "--out", str(out), "--server", SERVER)
    assert r.returncode == 0, r.stderr
    sheet, key = out.read_text(encoding="utf-8"), (tmp_path / "sheet-answers.html").read_text(encoding="utf-8")
    assert "Exercise 1</h2>" in sheet and "Answer: " in key and "Answer: " not in sheet
    assert all(u.startswith(SERVER + "/?") for u in links_in(sheet) + links_in(key))
    assert_one_error_line(run("lesson.worksheet", "--out", str(tmp_path / "x.html"), "--server", "ftp://x"), "--server")
    assert not (tmp_path / "x.html").exists()
