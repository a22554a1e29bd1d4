"""The front door, the docs and the journal: every relative link resolves (files and #anchors), no link
leaves the repository, the README shows the two commands first and keeps dates and seeds in its
strength table's commands, every experiment is indexed, reference pages stay short."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
# The journal and the studies are read from the docs, so their links must resolve too.
JOURNAL = sorted((ROOT / "experiments").rglob("*.md")) + sorted((ROOT / "studies").glob("*/README.md"))
PAGES = DOCS + JOURNAL
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")
IMAGE = re.compile(r"\!\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (underscores and dashes kept),
    spaces to dashes."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    anchors, seen = set(), {}
    in_code = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        slug = _slug(line.lstrip("#"))
        count = seen.get(slug, 0)
        anchors.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return anchors


def _links(page: Path):
    in_code = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        if not in_code:
            yield from LINK.findall(line)


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page):
    for target in _links(page):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.is_relative_to(ROOT), f"{page.name}: {target} points outside the repository"
        assert resolved.exists(), f"{page.name}: {target} does not exist"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{page.name}: no heading #{anchor} in {resolved.name}"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_image_is_in_the_repository(page):
    for line in page.read_text().splitlines():
        for target in IMAGE.findall(line):
            if re.match(r"[a-z]+://", target):
                continue
            resolved = (page.parent / target).resolve()
            assert resolved.is_relative_to(ROOT) and resolved.exists(), f"{page.name}: image {target} is missing"


def test_no_page_sends_the_reader_to_files_outside_the_repository():
    for page in PAGES:
        assert "../shared" not in page.read_text(), page.name


def test_the_readme_shows_the_two_commands_on_its_first_screen():
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:25])
    assert "spades-train --config configs/quickstart.yaml" in first_screen
    assert "python -m pytest -q" in first_screen


# A date is YYYY-MM-DD; a seed is a seed's value written out: `--seed 7`, `seed=7`, `seed: 7`, `seed 7`,
# `seeds 1-3`. The README's figures carry them only in the commands of its strength table (the cells
# of the table under "## Strength" whose text is a backticked `spades-...` command), so new results
# go to the table or to docs/ and experiments/ instead of into denser sentences. Seeds passed to
# the API inside a fenced code example (`env.reset(seed=0)`) are code, not a figure's provenance, and a
# link's target (`experiments/2026-11-25-quickstart-runs/README.md`) is a path, not a date.
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
SEED = re.compile(r"(?i)\bseeds?\b\s*[=:]?\s*\d|--seed\b")


def _strength_table(lines: list[str]) -> range:
    start = next(i for i, line in enumerate(lines) if line.strip() == "## Strength")
    first = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    end = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    return range(first, end)


def _without_table_commands(line: str) -> str:
    """A strength-table row with its backticked spades-* commands cut out."""
    return re.sub(r"`spades-[^`]*`", "", line)


def _dates_and_seeds_outside_the_strength_table(text: str) -> list[str]:
    lines = text.splitlines()
    table = _strength_table(lines)
    found, in_code = [], False
    for number, line in enumerate(lines):
        if line.startswith("```"):
            in_code = not in_code
            continue
        checked = _without_table_commands(line) if number in table else line
        checked = re.sub(r"\]\([^)\s]*\)", "]", checked)   # a link's target is a path, not a date
        if DATE.search(checked) or (not in_code and SEED.search(checked)):
            found.append(f"line {number + 1}: {line.strip()[:100]}")
    return found


def test_the_readme_keeps_dates_and_seeds_in_its_strength_table_commands():
    text = (ROOT / "README.md").read_text()
    assert _dates_and_seeds_outside_the_strength_table(text) == []
    lines = text.splitlines()
    header = lines[_strength_table(lines).start]
    assert header.startswith("| agent") and header.rstrip().endswith("| commands |"), header


def test_the_date_and_seed_rule_catches_what_it_forbids():
    table = "## Strength\n\n| agent | commands |\n|---|---|\n| `neural` | `spades-eval --seed 9` |\n"
    assert _dates_and_seeds_outside_the_strength_table(table) == []
    for bad in ["It took 6 min (idle, 2026-11-27).", "measured with --seed 3", "over seeds 1-3", "seed=4 gave"]:
        assert _dates_and_seeds_outside_the_strength_table(bad + "\n\n" + table), bad
    in_a_cell_not_a_command = table.replace("| `neural` |", "| `neural` (2026-11-29) |")
    assert _dates_and_seeds_outside_the_strength_table(in_a_cell_not_a_command)
    assert _dates_and_seeds_outside_the_strength_table("```python\nenv.reset(seed=0)\n```\n" + table) == []
    assert _dates_and_seeds_outside_the_strength_table("[runs](experiments/2026-11-25-x/README.md)\n" + table) == []
    assert _dates_and_seeds_outside_the_strength_table("[runs of 2026-11-25](x.md)\n" + table)


def test_the_journal_indexes_every_experiment_folder():
    journal = (ROOT / "experiments" / "JOURNAL.md").read_text()
    folders = sorted(p.name for p in (ROOT / "experiments").iterdir() if p.is_dir())
    assert folders, "experiments/ holds no experiment"
    for name in folders:
        assert re.fullmatch(r"20\d\d-[01]\d-[0-3]\d-[a-z0-9-]+", name), f"experiments/{name}: not YYYY-MM-DD-slug"
        assert (ROOT / "experiments" / name / "README.md").exists(), f"experiments/{name} has no README.md"
        assert f"({name}/README.md)" in journal, f"experiments/JOURNAL.md has no row linking {name}"
    for study in sorted(p.name for p in (ROOT / "studies").iterdir() if p.is_dir()):
        assert f"(../studies/{study}/README.md)" in journal, f"experiments/JOURNAL.md does not index studies/{study}"


def test_the_reference_pages_stay_short():
    """docs/ is the reference; a page that grows past ~400 lines is turning into a lab notebook
    (its history belongs in experiments/). The rule book and the API are exempt."""
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name in ("rules.md", "api.md"):
            continue
        assert len(page.read_text().splitlines()) <= 420, f"docs/{page.name} is over 420 lines"
    assert len((ROOT / "docs" / "model_card.md").read_text().splitlines()) <= 150


def test_the_training_docs_list_every_config_field_as_the_code_says():
    from train.ppo.config import fields_markdown
    text = (ROOT / "docs" / "training.md").read_text()
    table = text.split("<!-- fields:start -->\n", 1)[1].split("\n<!-- fields:end -->", 1)[0]
    assert table == fields_markdown(), ("docs/training.md's field table is out of date: regenerate it with "
                                        "train.ppo.config.fields_markdown()")
