"""Docs that cannot drift: every view of the registry and every link parameter the page reads or writes is in
docs/contract.md's link table, and every view in the README's view table; no code comment cites an issue number."""

import ast
import inspect
import os
import re
from pathlib import Path

from views.registry import VIEWS
from views.state import FLAGS

ROOT = Path(__file__).resolve().parents[2]
PARAM_READERS = {"text_param", "int_param", "choice_param"}  # views/state.py: (params, key, ...)
PARAM_HELPERS = {"head_param": "head", "heads_param": "off"}  # views/state.py: they read one key each


def link_table() -> dict[str, str]:
    """docs/contract.md's link table: {parameter: its row}, a row naming several (`from`, `rule`) under each."""
    text = (ROOT / "docs" / "contract.md").read_text()
    table = text[text.index("| parameter | meaning |"):]
    table = table[:table.index("\n\n")]
    rows = {}
    for line in table.splitlines()[2:]:
        first = line.split("|")[1]
        for name in re.findall(r"`([^`]+)`", first):
            rows[name] = line
    return rows


def link_keys() -> set[str]:
    """Every link parameter the page's code reads or writes, found in its source: the keys given to views/state.py's
    readers, read off `params` or `st.query_params`, or written into a link's dict."""
    keys = set(FLAGS)  # read in a loop over their names (views/state.py read_flags)
    for path in [ROOT / "app.py", *sorted((ROOT / "views").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in PARAM_READERS and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    keys.add(node.args[1].value)
                elif name in PARAM_HELPERS:
                    keys.add(PARAM_HELPERS[name])
                elif (name == "get" and isinstance(node.func, ast.Attribute) and node.args
                      and isinstance(node.args[0], ast.Constant) and ast.unparse(node.func.value).endswith("params")):
                    keys.add(node.args[0].value)
            elif (isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("params")
                  and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
                keys.add(node.slice.value)
            elif isinstance(node, ast.FunctionDef) and "link" in node.name:  # a view's link writer: its dict's keys
                for d in ast.walk(node):
                    if isinstance(d, ast.Dict):
                        keys |= {k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return keys


def test_the_scan_finds_the_parameters_it_must():
    """The scan's own known answers: a reader's key, a helper's key, a get, a loop's written keys."""
    assert {"s", "view", "layer", "head", "off", "method", "foil", "from", "rule", "model", "guess", "s2"} <= link_keys()


def test_every_link_parameter_is_in_the_contracts_table():
    missing = sorted(link_keys() - link_table().keys())
    assert not missing, f"link parameters the page reads or writes and docs/contract.md's link table lacks: {missing}"


def test_every_view_is_in_the_contracts_view_row_and_the_readme():
    row = link_table()["view"]
    readme = (ROOT / "README.md").read_text()
    for slug, view in VIEWS.items():
        assert f"`{slug}`" in row, f"docs/contract.md's `view` row lacks {slug}"
        assert f"| {view.label} (`{slug}`) |" in readme, f"README's view table lacks {view.label} ({slug})"


def test_no_code_comment_cites_an_issue_number():
    """In the project's own code: not in hidden folders (.git, a .venv made in the clone), installed packages (a venv
    of another name), the vendored assets or the tests' artifacts."""
    cited = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in {"artifacts", "assets", "site-packages"}]
        for path in (Path(folder) / n for n in names if n.endswith((".py", ".js", ".sh"))):
            cited += [f"{path.relative_to(ROOT)}:{i}" for i, line in enumerate(path.read_text().splitlines(), 1)
                      if re.search(r"\bissue #?\d+", line, re.I)]
    assert not cited, cited


def test_a_view_is_flagged_heavy_where_its_module_takes_heavy_turns():
    """The registry's heavy flag against the code: a module that takes a HEAVY turn has a heavy view, and every heavy
    view's module takes one (the benches and the page read the flag)."""
    from views import calls

    heavy_calls = [getattr(calls, f.name) for f in ast.parse(inspect.getsource(calls)).body
                   if isinstance(f, ast.FunctionDef) and "HEAVY.turn(" in ast.unparse(f)]
    assert calls.contributions in heavy_calls  # the scan's known answer
    by_module = {}
    for view in VIEWS.values():
        by_module.setdefault(inspect.getmodule(view.draw), []).append(view)
    for module, views in by_module.items():
        takes_turns = "HEAVY.turn(" in inspect.getsource(module) or any(f in vars(module).values() for f in heavy_calls)
        assert takes_turns == any(v.heavy for v in views), (module.__name__, [v.slug for v in views])


def test_every_view_is_in_exactly_one_family_in_the_registrys_order():
    """The view switch's two rows (views/registry.py FAMILIES): every registered view in one family, the families
    in VIEWS's order, the default view first of the first family (the walk: where a newcomer starts)."""
    from views.registry import DEFAULT_VIEW, FAMILIES, FAMILY_OF

    flat = [slug for f in FAMILIES for slug in f.views]
    assert flat == list(VIEWS) and len(set(flat)) == len(flat)
    assert DEFAULT_VIEW == FAMILIES[0].views[0] == "walk" and set(FAMILY_OF) == set(VIEWS)
    assert all(f.name and f.line.endswith(".") for f in FAMILIES) and len({f.name for f in FAMILIES}) == len(FAMILIES)
    readme = (ROOT / "README.md").read_text()
    places = [readme.index(f"**{f.name}**: {f.line}") for f in FAMILIES]  # each family with its line, in order
    assert places == sorted(places)
    for f, at in zip(FAMILIES, places):
        for slug in f.views:
            assert readme.index(f"(`{slug}`) |") > at, (f.name, slug)
