"""The house's layering (docs: DESIGN): the rules floor (spades_env) imports neither the agents
nor training, no module imports another package's private names, and modules stay readable."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("spades_env", "agents", "train")
MODULES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))
MAX_LINES = 1_100          # "about a thousand": a module one reader can hold


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


@pytest.mark.parametrize("path", MODULES + sorted((ROOT / "examples").glob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_another_packages_private_names(path):
    own = path.relative_to(ROOT).parts[0]
    for module, name in _imports(path):
        if name and name.startswith("_") and not name.startswith("__") and module.split(".")[0] in PACKAGES:
            assert module.split(".")[0] == own, f"{path.name} imports {module}.{name}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_stay_readable_in_size(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES, f"{path.name} has grown past {MAX_LINES} lines"
