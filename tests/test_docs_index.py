"""The README's documentation list names every page in docs/, so none is found only by
browsing the folder."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_docs_page_is_in_the_readmes_list() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    listed = readme.split("\n## Documentation\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", listed))
    pages = {f"docs/{page.name}" for page in (REPO / "docs").glob("*.md")}
    assert pages - named == set()
