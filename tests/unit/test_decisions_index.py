"""docs/decisions/README.md indexes every record, in order, with its status; every link from the index and from a
folded record's stub into docs/performance.md lands on a heading of that page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions"
STATUSES = ("current", "amended by", "superseded by")


def _records() -> list[str]:
    return sorted(path.name for path in DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))


def _index_rows() -> list[list[str]]:
    lines = (DECISIONS / "README.md").read_text(encoding="utf-8").splitlines()
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines if line.startswith("| [")]


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub writes it: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _performance_anchors() -> set[str]:
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    return {_anchor(line.lstrip("#")) for line in page.splitlines() if line.startswith("#")}


def test_the_index_has_a_row_per_record_in_order_each_with_a_status():
    rows = _index_rows()
    linked = [re.search(r"\]\(([^)]+)\)", row[0]).group(1) for row in rows]
    assert linked == _records()
    assert [row for row in rows if not row[1].startswith(STATUSES)] == []


def test_links_into_the_performance_page_land_on_its_headings():
    anchors = _performance_anchors()
    sources = [DECISIONS / "README.md", *DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md")]
    missing = [
        (source.name, anchor)
        for source in sources
        for anchor in re.findall(r"performance\.md#([\w-]+)", source.read_text(encoding="utf-8"))
        if anchor not in anchors
    ]
    assert missing == []


def test_the_performance_pages_own_links_land_on_its_headings():
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert set(re.findall(r"\]\(#([\w-]+)\)", page)) - _performance_anchors() == set()
