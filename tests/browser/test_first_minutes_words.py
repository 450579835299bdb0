"""What the page says of itself, in Chromium: Causes' box counts the words its pair really changes (the automatic
pair "Ein Mann" -> "Eine Frau" changes two, and the box said "one word changed"); every JSON and .npz download says
how it numbers layers, heads and steps; an exercise's answer box shows no "0/40" counter and says when an answer is
too long instead of cutting it off."""

import json

import numpy as np
import pytest

from appserver import wait_idle
from conftest import download, fresh_page

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_causes_box_counts_the_words_its_pair_changes(browser, server):
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Ein+Mann+spielt+Gitarre+auf+der+Straße.&view=patch")
    try:
        box = pg.get_by_label("Second sentence: 2 words changed (press Enter)")
        box.wait_for(timeout=60_000)
        assert box.input_value() == "Eine Frau spielt Gitarre auf der Straße."  # the automatic pair
        box.fill("Ein Mann spielt Geige auf der Straße.")
        box.press("Enter")
        pg.get_by_label("Second sentence: 1 word changed (press Enter)").wait_for(timeout=60_000)
        wait_idle(pg, 120_000)
    finally:
        ctx.close()
    assert not errors, errors


def test_every_json_and_npz_download_says_how_it_numbers(browser, server, tmp_path):
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Ein+Mann+spielt+Gitarre.&view=patch&s2=Eine+Frau+spielt+Gitarre.")
    try:
        pg.get_by_text("Where the difference travels").wait_for(timeout=120_000)
        wait_idle(pg, 120_000)
        patching = json.loads(download(pg, "Patching (JSON)", tmp_path).read_text(encoding="utf-8"))
        assert "count from 0" in patching["numbering"] and patching["step"] >= 0  # a view's own JSON
        result = json.loads(download(pg, "Result (JSON)", tmp_path).read_text(encoding="utf-8"))
        assert "the page's layer 1" in result["provenance"]["numbering"]
        with np.load(download(pg, "All maps (.npz)", tmp_path), allow_pickle=False) as z:
            assert "count from 0" in json.loads(str(z["provenance"]))["numbering"]
        with np.load(download(pg, "For BertViz (.npz)", tmp_path), allow_pickle=False) as z:
            assert "count from 0" in str(z["numbering"])
    finally:
        ctx.close()
    assert not errors, errors


def test_an_answer_box_has_no_counter_and_says_when_an_answer_is_too_long(browser, server):
    ctx, pg, errors = fresh_page(browser, f"{server}/?s=Ein+Hund+läuft.&view=exercises")
    try:
        owner = pg.locator("[class*='st-key-exercise_box_'] [data-testid='stTextInput']").first  # a number to type
        owner.wait_for(timeout=60_000)
        box = owner.get_by_label("Your answer (a number; press Enter)")
        box.fill("1" * 45)
        box.press("Enter")
        # the answer's run is done: wait_idle alone returned before that run had started once, on a busy machine
        pg.get_by_text("Your answer has 45 characters").first.wait_for(timeout=30_000)
        wait_idle(pg)
        assert box.input_value() == "1" * 45  # kept whole, not cut to 40
        assert "/40" not in owner.inner_text()
        assert pg.get_by_text("Your answer has 45 characters").count() == 1
    finally:
        ctx.close()
    assert not errors, errors
