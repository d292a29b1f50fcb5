"""Keep docs/conformance.md current.

python scripts/conformance.py summary          # print the counts; reads only
python scripts/conformance.py check            # exit 1 if the Summary line is stale or a
                                               # done row names a test that does not exist
python scripts/conformance.py mark marks.tsv   # rows "<id>\t<tests>" become done; recounts
python scripts/conformance.py recount          # rewrite the Summary line from the rows
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "conformance.md"
TESTS = ROOT / "tests"
STATUSES = ("done", "open", "superseded")
_ROW = re.compile(r"^\| (\d{3}-\d+) \|")
_SUMMARY = re.compile(r"^Rows per seed:.*$", re.M)
#: A test named in a row: ``test_module::test_function`` (a parametrize id may follow).
_NAMED_TEST = re.compile(r"`(test_\w+)::(test_\w+)(?:\[[^\]`]*\])?`")


@dataclass(frozen=True, slots=True)
class Row:
    id: str
    status: str
    tests: str


def rows(text: str) -> list[Row]:
    """The scenario rows of the document's tables."""
    out = []
    for found in re.finditer(r"^\| (\d{3}-\d+) \|(.*)$", text, re.M):
        cells = found.group(2).split(" | ")  # requirement, scenario, status, test, notes
        out.append(Row(found.group(1), cells[2].strip(), cells[3].strip()))
    return out


def named_tests(row: Row) -> list[tuple[str, str]]:
    """The (module, function) pairs a row's test cell names."""
    return [(m.group(1), m.group(2)) for m in _NAMED_TEST.finditer(row.tests)]


def missing_tests(text: str, tests_dir: Path = TESTS) -> list[str]:
    """One line per problem: a ``done`` row that names no test, or names one that
    ``tests_dir`` does not define."""
    problems = []
    for row in rows(text):
        if row.status != "done":
            continue
        named = named_tests(row)
        if not named:
            problems.append(f"{row.id}: done but names no test_module::test_function")
        for module, function in named:
            path = tests_dir / f"{module}.py"
            source = path.read_text(encoding="utf-8") if path.exists() else ""
            if not re.search(rf"^(?:async )?def {function}\(", source, re.M):
                problems.append(f"{row.id}: {module}::{function} not found in {path.name}")
    return problems


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s))


def summary(text: str) -> str:
    """The Summary line the rows of ``text`` call for."""
    seeds: dict[str, dict[str, int]] = {}
    for row in rows(text):
        seed = seeds.setdefault(row.id[:3], {})
        seed[row.status] = seed.get(row.status, 0) + 1
    total: dict[str, int] = {}
    parts = []
    for name, counts in sorted(seeds.items()):
        for status, n in counts.items():
            total[status] = total.get(status, 0) + n
        parts.append(f"{name} — {sum(counts.values())} ({_counts(counts)})")
    return (
        "Rows per seed: "
        + " · ".join(parts)
        + f" · total {sum(total.values())} ({_counts(total)})."
    )


def recount() -> str:
    """Rewrite the document's Summary line; returns it."""
    text = DOC.read_text(encoding="utf-8")
    line = summary(text)
    DOC.write_text(_SUMMARY.sub(line, text), encoding="utf-8")
    return line


def mark(marks_file: str) -> None:
    lines = Path(marks_file).read_text(encoding="utf-8").strip().split("\n")
    marks = dict(line.split("\t", 1) for line in lines)
    out = []
    for line in DOC.read_text(encoding="utf-8").splitlines(keepends=True):
        found = _ROW.match(line)
        if found and found.group(1) in marks:
            cells = line.rstrip("\n").split(" | ")  # id, requirement, scenario, status, test, notes
            cells[3], cells[4] = "done", marks[found.group(1)]
            line = " | ".join(cells) + "\n"
        out.append(line)
    DOC.write_text("".join(out), encoding="utf-8")


def check() -> list[str]:
    """Problems with the document as it stands (empty when it is consistent)."""
    text = DOC.read_text(encoding="utf-8")
    problems = missing_tests(text)
    stated = _SUMMARY.search(text)
    if stated is None or stated.group(0) != summary(text):
        problems.append("the Summary line is stale: run scripts/conformance.py recount")
    return problems


def main(argv: list[str]) -> int:
    match argv:
        case ["summary"]:
            print(summary(DOC.read_text(encoding="utf-8")))
        case ["recount"]:
            print(recount())
        case ["mark", marks_file]:
            mark(marks_file)
            print(recount())
        case ["check"]:
            problems = check()
            print("\n".join(problems) or "ok")
            return 1 if problems else 0
        case _:
            print(__doc__, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
