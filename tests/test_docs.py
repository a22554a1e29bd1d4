"""The front door and the docs: every relative link resolves (files and #anchors), no link
leaves the repository, the README stays short and shows the two commands first."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
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


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
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


def test_no_page_sends_the_reader_to_files_outside_the_repository():
    for page in PAGES:
        assert "../shared" not in page.read_text(), page.name


def test_the_readme_is_a_short_front_door():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 15_000          # 15 KB at most (issue 39)
    first_screen = "\n".join(text.splitlines()[:40])
    assert "spades-train --config configs/quickstart.yaml" in first_screen
    assert "python -m pytest -q" in first_screen


def test_the_training_docs_list_every_config_field_as_the_code_says():
    from train.config import fields_markdown
    text = (ROOT / "docs" / "training.md").read_text()
    table = text.split("<!-- fields:start -->\n", 1)[1].split("\n<!-- fields:end -->", 1)[0]
    assert table == fields_markdown(), ("docs/training.md's field table is out of date: regenerate it with "
                                        "train.config.fields_markdown()")
