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
