"""Picks drawn in the browser (views/maps.js): a change of layer, head, mean, drawing, colour stretch, a grid tile or
a token's lines runs no script, draws the translator's own numbers, and the address bar follows it (slow tier:
the real app in headless Chromium)."""

from pathlib import Path

import plotly
from plotly.offline import get_plotlyjs_version

from views.instant import plotly_source, serve_plotly


ROOT = Path(__file__).resolve().parents[2]


def test_plotly_js_is_the_cartesian_bundle_of_the_installed_version():
    """The page's plotly.js is plotly.js's own cartesian bundle (assets/plotly/, a third of the full one's size) of
    exactly the version the installed plotly package writes figures for, as its header says; without such a bundle
    (another plotly installed), the package's full plotly.js."""
    version = get_plotlyjs_version()  # the one the package writes figures for
    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert f"plotly.js v{version}" in full.read_text(encoding="utf-8")[:200]
    shipped = sorted((ROOT / "assets" / "plotly").glob("plotly-cartesian-*.min.js"))
    assert shipped, "no cartesian bundle in assets/plotly/"
    for bundle in shipped:  # each file is the release its name says
        named = bundle.name.removeprefix("plotly-cartesian-").removesuffix(".min.js")
        assert f"plotly.js (cartesian - minified) v{named}\n" in bundle.read_text(encoding="utf-8")[:200]
    cartesian = ROOT / "assets" / "plotly" / f"plotly-cartesian-{version}.min.js"
    assert plotly_source() == (cartesian if cartesian.is_file() else full)
    assert serve_plotly().endswith(f"plotly-{'cartesian-' * cartesian.is_file()}{version}.min.js.gz")
