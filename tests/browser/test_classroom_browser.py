"""A class, live, in Chromium: the teacher starts it from Exercises, two students join by their link and answer, the
projector (the teacher's link, presenter layout) shows each answer within 2 s without a reload, then reveals the
model's answer; the students see it. A server of this module's own, on a fresh SQLite database."""

import re
import time

import pytest

from appserver import free_port, start_app, stop_app, wait_idle
from conftest import CHECKPOINT, fresh_page
from lesson import classroom

SENTENCE = "Zwei Männer spielen Fußball auf einer Wiese."


@pytest.fixture(scope="module")
def class_server(tmp_path_factory):
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    folder = tmp_path_factory.mktemp("classes")
    port = free_port()
    proc = start_app(port, env={classroom.DIR_ENV: str(folder), classroom.URL_ENV: ""})
    yield f"http://127.0.0.1:{port}", folder
    stop_app(proc)


def join(browser, link: str, name: str):
    ctx, pg, errors = fresh_page(browser, link)
    pg.get_by_label("Nickname").fill(name)
    pg.get_by_role("button", name="Join").click()
    pg.get_by_text("waiting for the teacher's first question").wait_for(timeout=30_000)
    pg.wait_for_url(re.compile(r"[?&]seat="), timeout=5_000)  # in the link at once: a reload keeps the seat
    pg.reload()
    pg.get_by_text("waiting for the teacher's first question").wait_for(timeout=30_000)
    assert pg.get_by_label("Nickname").count() == 0
    return ctx, pg, errors


@pytest.mark.slow
@pytest.mark.alone  # the projector shows the answer within 2 s
@pytest.mark.browser
def test_a_class_votes_and_the_projector_follows_live(browser, class_server):
    server, folder = class_server
    ctx, teacher, errors = fresh_page(browser, server + "/?" + f"s={SENTENCE}&view=exercises")
    teacher.get_by_text("For teachers").click()
    teacher.get_by_role("button", name=re.compile("Start a class")).click()
    teacher.get_by_text(re.compile(r"Class [A-Z0-9]{6} started")).wait_for(timeout=120_000)
    links = [c for c in teacher.locator("[data-testid='stCode']").all_inner_texts() if "class=" in c]
    student_link, teacher_link = links[0].strip(), links[1].strip()
    assert "key=" not in student_link and "key=" in teacher_link
    code = re.search(r"class=([A-Z0-9]{6})", student_link).group(1)

    teacher.goto(teacher_link)
    teacher.locator(".st-key-class_panel").wait_for(timeout=60_000)
    students = [join(browser, student_link, name) for name in ("Ana", "<b>Ben</b>")]
    teacher.get_by_text("2 joined").wait_for(timeout=5_000)
    teacher.locator(".st-key-class_panel").get_by_role("button", name="Ask", exact=True).click()
    wait_idle(teacher)
    asked = classroom.Store(f"sqlite:///{folder / 'classes.sqlite'}").state(code).asked()  # what the page opened
    for i, (_, pg, _) in enumerate(students):
        box = pg.locator(".st-key-class_panel")
        box.get_by_text(asked.title).wait_for(timeout=5_000)  # the question came without a reload
        box.get_by_role("button", name=asked.options[i % len(asked.options)], exact=True).click()
        box.get_by_text("Your answer is in").wait_for(timeout=10_000)
        t = time.monotonic()
        teacher.get_by_text(f"{i + 1} of 2").wait_for(timeout=5_000)
        assert time.monotonic() - t <= 2.0, "the projector took more than 2 s to show the answer"
    assert teacher.get_by_text("<b>Ben</b>").count() >= 1  # the nickname as text
    teacher.get_by_role("button", name="Reveal").click()
    teacher.locator("[data-testid='stAlert']").get_by_text("The model's answer").wait_for(timeout=10_000)
    for sctx, pg, serrors in students:  # the students' panels follow within their redraw
        pg.locator("[data-testid='stAlert']").get_by_text("The model's answer").wait_for(timeout=5_000)
        sctx.close()
        assert not serrors, serrors
    ctx.close()
    assert not errors, errors


@pytest.mark.slow
@pytest.mark.browser
def test_the_qti_download_holds_the_picked_exercises_with_the_models_answers(browser, class_server, tmp_path):
    """The file the teacher's button downloads: every picked exercise once, each correct response the answer
    lesson/exercises.py computes from the model on this sentence."""
    import io
    import xml.etree.ElementTree as ET
    import zipfile

    from lesson.exercises import exercises
    from lesson.qti import QTI
    from model.checkpoint import DEFAULT_CHECKPOINT
    from model.translator import Translator

    server, _ = class_server
    ctx, pg, errors = fresh_page(browser, server + "/?" + f"s={SENTENCE}&view=exercises")
    pg.get_by_text("For teachers").click()
    with pg.expect_download(timeout=120_000) as got:
        pg.get_by_role("button", name="QTI 2.1 (Moodle, Canvas)").click()
    path = tmp_path / "qti.zip"
    got.value.save_as(path)
    want = {ex.number: ex for ex in exercises(Translator.load(), DEFAULT_CHECKPOINT, SENTENCE)}
    with zipfile.ZipFile(path) as z:
        items = {n: ET.fromstring(z.read(n)) for n in z.namelist() if n.startswith("items/")}
    assert len(items) == len(want)  # all picked at first
    for item in items.values():
        ex = want[int(item.get("identifier").split("-")[1])]
        value = item.find(f"{{{QTI}}}responseDeclaration/{{{QTI}}}correctResponse/{{{QTI}}}value").text
        assert value == (f"choice-{ex.options.index(ex.answer)}" if ex.options else ex.answer)
    ctx.close()
    assert not errors, errors
