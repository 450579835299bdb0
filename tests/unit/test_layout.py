"""The layout of the code: the rule at the top of model/__init__.py and its map, which package may import which, and
the dependencies pyproject.toml declares beside requirements.txt (the README's install file)."""

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "model"
LESSON = ROOT / "lesson"

# Modules of model/ that may import model/cli.py when they are imported: the pure commands, which nothing else in
# the repository imports (their whole job is `python -m model.NAME`). Every other module imports cli inside the
# functions that parse arguments, or under `if __name__ == "__main__":`.
COMMANDS = {"evaluate", "inspect", "silver", "train", "train_lengths", "translate"}
# Library modules that still import cli at import (none: an entry would leave this set when its module stops).
CLI_AT_IMPORT_PENDING = set()


def modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")


def imported(tree) -> set[str]:
    """Every module name an AST imports, those inside functions included, as absolute dotted names where the
    import is relative to model/ or lesson/ (`from . import cli` -> model.cli)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = "PACKAGE" + ("." + base if base else "")
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names}
    return names


def top(name: str) -> str:
    return name.split(".")[0]


def test_the_map_names_every_module_of_model():
    """model/__init__.py opens with the rule and a map naming each model/*.py at the start of its own line
    (`    name.py   what it is`): a new module gets its line."""
    doc = ast.get_docstring(ast.parse((MODEL / "__init__.py").read_text(encoding="utf-8")))
    assert doc and "The rule for model/" in doc, "model/__init__.py does not open with the rule"
    named = set(re.findall(r"^    (\w+)\.py ", doc, re.M))
    missing = [p.name for p in modules(MODEL) if p.stem not in named]
    assert not missing, f"model/__init__.py's map does not name {missing}"
    stale = sorted(n for n in named if not (MODEL / f"{n}.py").is_file())
    assert not stale, f"model/__init__.py's map names modules that do not exist: {stale}"


def test_model_imports_neither_viz_nor_views():
    """Data flows from model/ to viz/ and views/, never back: not even inside a function."""
    for path in modules(MODEL) + [MODEL / "__init__.py"]:
        found = {top(n) for n in imported(ast.parse(path.read_text(encoding="utf-8")))} & {"viz", "views", "app"}
        assert not found, f"model/{path.name} imports {sorted(found)}"


def cli_at_import(tree) -> bool:
    """Whether a module imports cli when it is imported: an import of cli outside every function and class, and
    outside `if __name__ == "__main__":` (which runs only as a command)."""

    def walk(nodes):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.ImportFrom) and (
                    (node.level == 1 and (node.module == "cli" or any(a.name == "cli" for a in node.names)
                                          and not node.module))
                    or (node.module == "model" and any(a.name == "cli" for a in node.names))
                    or node.module == "model.cli"):
                return True
            if isinstance(node, ast.Import) and any(a.name == "model.cli" for a in node.names):
                return True
            if walk(ast.iter_child_nodes(node)):
                return True
        return False

    return walk(tree.body)


def test_no_library_module_imports_cli_when_imported():
    """The commands' parser (model/cli.py) loads with a command, not with the library the page imports."""
    at_import = {p.stem for p in modules(MODEL) if cli_at_import(ast.parse(p.read_text(encoding="utf-8")))}
    assert at_import <= COMMANDS | CLI_AT_IMPORT_PENDING, sorted(at_import - COMMANDS - CLI_AT_IMPORT_PENDING)
    freed = CLI_AT_IMPORT_PENDING - at_import
    assert not freed, f"{sorted(freed)} no longer import cli: take them out of CLI_AT_IMPORT_PENDING"
    for path in modules(LESSON):
        assert not cli_at_import(ast.parse(path.read_text(encoding="utf-8"))), f"lesson/{path.name} imports cli"


def test_lesson_material_lives_in_lesson_and_imports_no_page():
    """The exercises and the worksheet are lesson material (lesson/), out of model/; the page imports them, never
    the other way round."""
    assert {p.name for p in modules(LESSON)} >= {"exercises.py", "worksheet.py"}
    assert not {"exercises.py", "worksheet.py"} & {p.name for p in modules(MODEL)}
    for path in modules(LESSON) + [LESSON / "__init__.py"]:
        found = {top(n) for n in imported(ast.parse(path.read_text(encoding="utf-8")))} & {"views", "app", "viz"}
        assert not found, f"lesson/{path.name} imports {sorted(found)}"


def requirement(line: str) -> str | None:
    """A requirement line without its comment and extras' spaces (`name[extra]>=1,<2`), or None for none."""
    text = line.split("#")[0].strip()
    return re.sub(r"\s+", "", text) or None


def name_of(req: str) -> str:
    return re.split(r"[\[<>=!~ ;]", req, maxsplit=1)[0].lower().replace("_", "-")


def test_pyproject_declares_exactly_what_requirements_txt_installs():
    """Every line of requirements.txt is in pyproject.toml's dependencies or one of its extras with the same
    specifier, and pyproject declares nothing requirements.txt leaves out: the two cannot drift."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [requirement(r) for r in project.get("dependencies", [])]
    for extra in ("app", "dev"):
        assert extra in project.get("optional-dependencies", {}), f"pyproject.toml has no [{extra}] extra"
    declared += [requirement(r) for extra in project["optional-dependencies"].values() for r in extra
                 if name_of(r) != project["name"]]  # an extra may name the project itself (dev = app + tools)
    wanted = [r for r in map(requirement, (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()) if r]
    assert len({name_of(r) for r in declared}) == len(declared), f"a package declared twice: {declared}"
    assert sorted(declared) == sorted(wanted), (sorted(set(declared) - set(wanted)), sorted(set(wanted) - set(declared)))
