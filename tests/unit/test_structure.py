"""The code's structure: which module may import which."""

from conftest import ROOT


def test_no_module_imports_itself_round_about():
    """The imports of app.py, model/, views/, viz/ and bench/ have no cycle, those inside functions included: which
    module may use another must not depend on which was imported first, and a deferred import (how a tool keeps
    its start fast) still says that one module needs the other."""
    import ast

    files = [ROOT / "app.py", *(p for d in ("model", "views", "viz", "bench") for p in (ROOT / d).glob("*.py"))]
    name = {f: ".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__") for f in files}
    modules = set(name.values())
    graph = {}
    for f in files:
        package = name[f] if f.name == "__init__.py" else name[f].rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, *([node.module] if node.module else [])])
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
        graph[name[f]] = {t for t in targets if t in modules and t != name[f]}

    def cycle_from(module, path):
        if module in path:
            return path[path.index(module):] + [module]
        for nxt in sorted(graph[module]):
            found = cycle_from(nxt, path + [module])
            if found:
                return found
        return None

    for module in sorted(graph):
        assert cycle_from(module, []) is None, " -> ".join(cycle_from(module, []))


def views_imported(path) -> set[str]:
    """The modules of views/ that one file imports (by their file's stem), those inside functions included."""
    import ast

    stems = {p.stem for p in (ROOT / "views").glob("*.py")}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:  # from .x import ..., from . import x
            found |= {node.module} if node.module else {a.name for a in node.names if a.name in stems}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("views."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("views.")}
    return found


def test_views_never_import_one_another():
    """The registry (views/registry.py) is the one module that imports the views: what several of them share has
    its own module (state, calls, widgets, ...) or lives in viz/, so that each view reads, and changes, alone."""
    views = views_imported(ROOT / "views/registry.py")  # the modules whose views the switch shows
    assert {"walk", "attention", "trace", "stats"} <= views, views
    for path in sorted((ROOT / "views").glob("*.py")):
        if path.name != "registry.py":
            assert not views_imported(path) & views, f"{path.name} imports {sorted(views_imported(path) & views)}"


def test_guess_first_knows_how_many_stops_the_walk_has():
    from views.guess import WALK_STOPS
    from views.walk import STOPS

    assert WALK_STOPS == len(STOPS)


def test_the_walk_names_the_views_it_opens_as_the_switch_does():
    from views.registry import VIEWS
    from views.walk import OPENS, STOPS

    assert {stop.opens for stop in STOPS if stop.opens} <= set(OPENS)
    assert {slug: VIEWS[slug].label for slug in OPENS} == OPENS


def test_browser_code_keeps_to_120_columns():
    """The browser side reads like the Python side (docs/contract.md, "The maps in the browser"): views/*.js lines
    within 120 columns."""
    long = [f"{path.name}:{number} ({len(line)})" for path in sorted((ROOT / "views").glob("*.js"))
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if len(line) > 120]
    assert not long, f"lines over 120 columns: {long}"


def test_each_component_reaches_the_framework_by_one_name():
    """views/explorer.js declares one top-level name, `Explorer` (the framework: mount, decode, at, picks, ...), and
    each component (views/<name>.js, after it in one module: views/instant.py) exports its own named function: no
    helper reaches another file as an implicit global."""
    import re

    declared = re.compile(r"^(?:export\s+default\s+)?(?:async\s+)?(?:const|let|var|function|class)\s+(\w+)", re.M)
    assert declared.findall((ROOT / "views/explorer.js").read_text(encoding="utf-8")) == ["Explorer"]
    components = sorted(p for p in (ROOT / "views").glob("*.js") if p.name != "explorer.js")
    assert components, "no component found beside views/explorer.js"
    for path in components:
        code = path.read_text(encoding="utf-8")
        assert "Explorer" not in declared.findall(code), path.name
        assert f"\nfunction {path.stem}(" in code and code.rstrip().endswith(f"export default {path.stem};"), path.name
        assert re.search(r"Explorer\.mount\(", code), f"{path.name} mounts its view with Explorer.mount"
