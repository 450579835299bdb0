"""The training replay (model/replay.py, views/training.py): a tiny run's snapshots replayed and shipped, checked
against the weights they were taken from; the shipped replay against the model it replays; the view by link."""

import json

import pytest

from conftest import CHECKPOINT, charts, from_url, markdown, shown


REPLAY = CHECKPOINT / "replay"


def shipped():
    if not (REPLAY / "replay.json").is_file():
        pytest.skip("no shipped replay")
    return json.loads((REPLAY / "replay.json").read_text())


@pytest.mark.slow
def test_the_training_view_by_link(monkeypatch):
    m = shipped()
    p = m["snapshots"][3]
    at = from_url(monkeypatch, s=m["examples"][0], view="training", at=str(p["step"]), kind="enc", layer="2",
                  head="3")
    assert not at.exception and not at.warning
    assert at.select_slider(key="training_at").value == p["step"]
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert any(t.replace("<br>", " ").startswith(f"Encoder self-attention, layer 2, head 3, step {p['step']:,}")
               for t in titles), titles  # wrapped to the map's width (tests/test_smaller_things.py)
    words = [t for t in p["examples"][0]["steps"] if t != "<eos>"]
    assert all(w in markdown(at) for w in words[:3])
    assert dict(at.query_params)["at"] == str(p["step"])
    at = from_url(monkeypatch, s="Ein Satz, der kein Beispiel ist.", view="training", at="12345")
    assert "not a snapshot of the replay" in shown(at.warning[0].value)
    assert any("covers the built-in examples" in i.value for i in at.info)
