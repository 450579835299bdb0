"""The team's benches run: each measures against the page as it is now, so a change of the page that breaks a bench
fails here instead of going unnoticed until the next measurement."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.browser
def test_app_speed_measures_every_figure_for_one_sentence():
    """bench/app_speed.py, one sentence picked through and one translated before reading memory: every figure
    printed, down to the summary. It crashed once Inside a head drew its far charts later (its bare-Plotly
    reference read the data of a chart not drawn yet)."""
    r = subprocess.run([sys.executable, "bench/app_speed.py", "--picked", "1", "--sentences", "1"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    for start in ("Enter -> translation", "bare Plotly.react", "change of head", "change of layer", "change of step",
                  "change of inside a head", "server memory", "maps on the wire", "summary:"):
        assert any(line.startswith(start) for line in lines), (start, r.stdout)
    assert "nan" not in r.stdout


@pytest.mark.slow
@pytest.mark.browser
def test_class_load_with_websocket_students_counts_every_answer():
    """bench/class_load.py --client ws, 3 students on SQLite: the students are sessions of Streamlit's own protocol
    (bench/st_session.py) on the real page, the projector a Chromium page; all 3 answers acknowledged and counted,
    the p95 and the chart's time printed."""
    if not (ROOT / "checkpoints" / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    r = subprocess.run([sys.executable, "bench/class_load.py", "--client", "ws", "--students", "3", "--within", "1"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = [line for line in r.stdout.splitlines() if line.startswith("summary:")]
    assert summary and re.fullmatch(r"summary: students 3 answered 3 counted 3 p95 \d+\.\d\d s chart \d+\.\d\d s",
                                    summary[-1]), r.stdout
    assert "every acknowledged answer counted: True (3 acknowledged, 3 of them in the database as given" in r.stdout


# A page for the client alone: a fragment that reruns on its own timer and has a button, a form, a button outside
# that writes the link, a checkbox whose value the server keeps.
CLIENT_PAGE = '''
import streamlit as st

st.markdown("link: " + ",".join(f"{k}={v}" for k, v in sorted(st.query_params.items())))


@st.fragment(run_every=0.5)
def ticker():
    st.session_state.ticks = st.session_state.get("ticks", 0) + 1
    st.markdown(f"ticks {st.session_state.ticks}")
    if st.button("Press", key="press"):
        st.markdown("pressed in the fragment")


ticker()
with st.form("f"):
    st.text_input("Name", key="name")
    st.form_submit_button("Send")
st.markdown(f"name is [{st.session_state.get('name', '')}], box {st.session_state.get('box')}")
if st.button("Outside"):
    st.query_params["x"] = "1"
st.checkbox("Box", value=True, key="box")
'''


@pytest.mark.slow
def test_st_session_speaks_to_a_real_page(tmp_path):
    """bench/st_session.Session against a real `streamlit run` of a small page: the fragment's auto-reruns come from
    the client's own timer, a button in the fragment reruns the fragment only (the page outside is not sent again),
    a form's text goes with its submit, a button press lasts one run, the link the server writes is carried on."""
    from appserver import free_port, start_app, stop_app
    from bench.st_session import Session
    from conftest import run_async

    page = tmp_path / "page.py"
    page.write_text(CLIENT_PAGE)
    port = free_port()
    proc = start_app(port, script=page)

    async def drive():
        s = Session(f"http://127.0.0.1:{port}", "a=b")
        await s.open()
        assert s.text_at("link: a=b") and s.text_at("name is [], box None")  # the box is drawn after
        assert list(s.timers.values())[0][0] == 0.5
        await s.wait_for_text("ticks 3", timeout=10)  # no message from the test: the client's timer
        assert await s.fill("Name", "Ada") is None  # in a form: nothing sent yet
        t = await s.click("Send")
        await s.wait_for_text("name is [Ada], box True", since=t)
        outside = s.text_at("name is [Ada]")
        t = await s.click("Press")
        pressed = await s.wait_for_text("pressed in the fragment", since=t)
        await s.idle()
        assert s.text_at("name is [Ada]") == outside  # a fragment run: the rest of the page was not drawn again
        await s.wait_until(lambda: not s.text_at("pressed in the fragment"), timeout=5)  # the next tick: no trigger
        assert pressed - t < 5
        t = await s.click("Outside")
        await s.wait_for_text("link: a=b", since=t)
        await s.idle()
        assert dict(p.split("=") for p in s.query.split("&")) == {"a": "b", "x": "1"}
        t = await s.rerun()
        await s.wait_for_text("link: a=b,x=1", since=t)  # the link the server wrote goes with the next run
        assert s.text_at("name is [Ada], box True", since=t)  # the form's value and the checkbox's kept
        await s.close()

    try:
        run_async(drive())
    finally:
        stop_app(proc)
