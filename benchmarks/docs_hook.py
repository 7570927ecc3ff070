"""MkDocs hook (mkdocs.yml): the latest `results.md` and `results.png` in docs/benchmarks.md.

The page holds the method; `<!-- results.md -->` on it is replaced at build time by this
directory's `results.md` (its title dropped, its headings one level down), and `results.png`
is served beside the page, so the site always shows the committed run and no number is
copied into prose.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results.md"
FIGURE = RESULTS.with_name("results.png")
MARKER = "<!-- results.md -->"


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, FIGURE.name, abs_src_path=str(FIGURE)))
    return files


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    body = RESULTS.read_text(encoding="utf-8").split("\n", 1)[1]
    body = re.sub(r"^(#+) ", r"#\1 ", body, flags=re.MULTILINE)
    return markdown.replace(MARKER, body)
