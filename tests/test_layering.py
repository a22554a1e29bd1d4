"""The house's layering (docs: DESIGN): spades_env -> agents -> evaluation -> train, web (and the
terminal table): each floor imports only the floors below it, no module imports another
package's private names, and modules stay readable."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The floors, lowest first; a package imports only packages on floors below its own.
LAYERS = {"spades_env": 0, "agents": 1, "evaluation": 2, "train": 3, "web": 3, "play": 3}
PACKAGES = tuple(name for name in LAYERS if (ROOT / name).is_dir())
MODULES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))
MAX_LINES = 1_000          # a module one reader can hold


def _imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                yield node.module, alias.name


@pytest.mark.parametrize("path", [p for p in MODULES if p.is_relative_to(ROOT / "spades_env")],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_rules_floor_imports_no_agents_and_no_training(path):
    for module, _ in _imports(path):
        assert module.split(".")[0] not in ("agents", "train"), f"{path.name} imports {module}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_floor_imports_only_the_floors_below(path):
    own = path.relative_to(ROOT).parts[0]
    for module, _ in _imports(path):
        top = module.split(".")[0]
        if top in LAYERS and top != own:
            assert LAYERS[top] < LAYERS[own], f"{path.relative_to(ROOT)} imports {module} (a floor not below {own})"


@pytest.mark.parametrize("path", MODULES + sorted((ROOT / "examples").glob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_another_packages_private_names(path):
    own = path.relative_to(ROOT).parts[0]
    for module, name in _imports(path):
        if name and name.startswith("_") and not name.startswith("__") and module.split(".")[0] in PACKAGES:
            assert module.split(".")[0] == own, f"{path.name} imports {module}.{name}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_stay_readable_in_size(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES, f"{path.name} has grown past {MAX_LINES} lines"


def _module_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (anywhere in it, lazy imports included)."""
    modules = {}
    for path in MODULES:
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or around a circle (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return circles


def test_import_circles_do_not_come_back():
    """Modules that import each other (lazily or not) are read together: there were six such
    circles on 2026-11-25, three are left (the batched engine and its C step's wrappers, the
    heuristic and its torch twin, the cooperation study and its report)."""
    circles = _import_circles(_module_graph())
    assert len(circles) <= 3, circles
