"""The house's layering (docs: DESIGN): spades_env -> agents -> evaluation -> coop -> train, web
(and the terminal table) -> tools: each floor imports only the floors below it, no module imports
another package's private names, and modules stay readable."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The floors, lowest first; a module imports only modules on floors below its own (within one
# package, its own floor too). A dotted name gives part of a package a floor of its own: the
# cooperation lab's partners, measures and methods sit under training (spades-train runs the
# methods and keeps the held-out partners out), while the parts of the lab that train or fit
# networks (the study, people's partners, the command) sit above it. Nothing sits above tools.
LAYERS = {"spades_env": 0, "agents": 1, "evaluation": 2, "coop": 3, "train": 4, "web": 4, "play": 4,
          "coop.study": 5, "coop.partners.clone": 5, "coop.cli": 5, "tools": 5}
PACKAGES = tuple(name for name in LAYERS if "." not in name and (ROOT / name).is_dir())
MODULES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))
MAX_LINES = 1_000          # a module one reader can hold


def _imports(path: Path):
    """(module, name) of every import; relative ones resolved (floors differ within a package)."""
    tree = ast.parse(path.read_text())
    parts = path.relative_to(ROOT).with_suffix("").parts
    package = list(parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(package[: len(package) - (node.level - 1)] + ([node.module] if node.module else []))
            for alias in node.names:
                yield (base, alias.name) if node.module else (f"{base}.{alias.name}", None)


@pytest.mark.parametrize("path", [p for p in MODULES if p.is_relative_to(ROOT / "spades_env")],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_rules_floor_imports_no_agents_and_no_training(path):
    for module, _ in _imports(path):
        assert module.split(".")[0] not in ("agents", "train"), f"{path.name} imports {module}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _floor(module: str):
    """The floor of a module: that of the longest name in LAYERS it sits under (None: not ours)."""
    while module and module not in LAYERS:
        module = module.rpartition(".")[0]
    return LAYERS.get(module)


def test_the_floors_are_real_packages_and_modules():
    for name in LAYERS:
        path = ROOT / name.replace(".", "/")
        assert path.is_dir() or path.with_suffix(".py").is_file(), f"LAYERS names {name}, which is not there"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_floor_imports_only_the_floors_below(path):
    own, floor = path.relative_to(ROOT).parts[0], _floor(_module_name(path))
    for module, _ in _imports(path):
        top, other = module.split(".")[0], _floor(module)
        if other is None:
            continue
        if top == own:
            assert other <= floor, f"{path.relative_to(ROOT)} imports {module} (a floor above its own)"
        else:
            assert other < floor, f"{path.relative_to(ROOT)} imports {module} (a floor not below {_module_name(path)})"


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
                # `from package import module` depends on the module, as `from package.module
                # import name` does; names that are not modules come from the package itself
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
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
    circles on 2026-11-25 and none is left (the batched engine's state has a module of its own,
    the heuristic's decisions one that the player and its torch twin import, the cooperation
    study's errors one apart from the study and its report)."""
    circles = _import_circles(_module_graph())
    assert circles == [], circles
