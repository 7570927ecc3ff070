"""Measure the shape of src/ against issue 41's targets: `python .ci/measure_shape.py`
prints a table; `--check` also exits 1 when a target is missed. Run from anywhere.

Counters (those of the design review): src lines over every `.py`; docstring lines, the
lines of string-constant statements opening or inside any body (via `ast`); identical
non-blank lines of `aio.py` ~ `sync.py` (stripped, `difflib` matching blocks); import
cycles, strongly connected components (Tarjan) of the graph of src modules importing each
other anywhere in a file, function-level imports included, relative imports resolved.
"""

from __future__ import annotations

import ast
import difflib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PKG = SRC / "langgraph/checkpoint/mongo"
SAVER_FILES = ("aio.py", "sync.py", "_surface.py")


def doc_lines(tree: ast.AST) -> int:
    seen: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        for st in body if isinstance(body, list) else []:
            if (
                isinstance(st, ast.Expr)
                and isinstance(st.value, ast.Constant)
                and isinstance(st.value.value, str)
            ):
                seen.update(range(st.lineno, (st.end_lineno or st.lineno) + 1))
    return len(seen)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, name: str, is_package: bool, modules: set[str]) -> Iterator[str]:
    """The src modules a module imports (`from pkg import mod` names the module `mod`)."""
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import mod` imports `mod`; `from mod import name`, `mod`.
            full = [f"{base}.{alias.name}" for alias in node.names]
            candidates = [name if name in modules else base for name in full]
        else:
            continue
        for candidate in candidates:
            # The nearest src module the name lies in (a name imported from a module).
            while candidate and candidate not in modules:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                yield candidate


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def strip(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def main(argv: list[str]) -> int:
    files = sorted(SRC.rglob("*.py"))
    texts = {f: f.read_text() for f in files}
    trees = {f: ast.parse(texts[f]) for f in files}
    sizes = {f: len(texts[f].splitlines()) for f in files}
    docs = {f: doc_lines(trees[f]) for f in files}
    names = {f: module_name(f) for f in files}
    modules = set(names.values())
    graph = {
        names[f]: set(imported(trees[f], names[f], f.name == "__init__.py", modules)) for f in files
    }
    found_cycles = cycles(graph)
    largest = max(files, key=lambda f: sizes[f])
    ops_files = sorted((PKG / "_operations").glob("*.py"))
    largest_ops = max(ops_files, key=lambda f: sizes[f]) if ops_files else None
    aio, sync = texts[PKG / "aio.py"], texts[PKG / "sync.py"]
    matcher = difflib.SequenceMatcher(None, strip(aio), strip(sync), autojunk=False)
    same = sum(block.size for block in matcher.get_matching_blocks())
    savers = [PKG / name for name in SAVER_FILES if (PKG / name).exists()]
    background = {f.name: len(re.findall(r"self\._in_background\(", texts[f])) for f in savers}
    touches = sum(
        len(re.findall(r"_queries\.touch_thread\(", texts[f]))
        for f in files
        if f != PKG / "_ttl.py"
    )

    def rel(f: Path) -> str:
        return str(f.relative_to(PKG))

    rows: list[tuple[str, object, object, bool]] = [
        ("src lines", sum(sizes.values()), "<= 13000", sum(sizes.values()) <= 13_000),
        ("src docstring lines", sum(docs.values()), "-", True),
        (
            f"largest module ({rel(largest)})",
            sizes[largest],
            "<= 800",
            sizes[largest] <= 800,
        ),
        (
            "saver modules lines (" + "+".join(f.name for f in savers) + ")",
            sum(sizes[f] for f in savers),
            "<= 950",
            sum(sizes[f] for f in savers) <= 950,
        ),
        (
            "saver modules docstring lines",
            sum(docs[f] for f in savers),
            "<= 400",
            sum(docs[f] for f in savers) <= 400,
        ),
        (
            "aio.py / sync.py lines",
            f"{sizes[PKG / 'aio.py']} / {sizes[PKG / 'sync.py']}",
            "-",
            True,
        ),
        ("identical non-blank lines aio~sync", same, "<= 40", same <= 40),
        (
            "self._in_background( sites per saver file",
            ", ".join(f"{k} {v}" for k, v in background.items()),
            "<= 1 each",
            all(v <= 1 for v in background.values()),
        ),
        ("_queries.touch_thread( sites outside _ttl.py", touches, "0", touches == 0),
        ("import cycles", len(found_cycles), "0", not found_cycles),
    ]
    if largest_ops is not None:
        rows.insert(
            3,
            (
                f"largest in _operations/ ({largest_ops.name})",
                sizes[largest_ops],
                "<= 350",
                sizes[largest_ops] <= 350,
            ),
        )
    width = max(len(row[0]) for row in rows)
    for label, value, target, ok in rows:
        mark = "" if target == "-" else ("ok" if ok else "MISSED")
        print(f"{label:<{width}}  {value!s:>16}  {target:>10}  {mark}")
    for component in found_cycles:
        print("cycle:", " <-> ".join(component))
    missed = [row[0] for row in rows if not row[3]]
    if "--check" in argv and missed:
        print("missed:", "; ".join(missed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
