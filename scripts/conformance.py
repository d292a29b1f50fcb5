"""Keep docs/conformance.md current.

python scripts/conformance.py mark marks.tsv   # rows "<id>\t<tests>" become done
python scripts/conformance.py summary          # recount the Summary line
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "conformance.md"
STATUSES = ("done", "open", "superseded")
_ROW = re.compile(r"^\| (\d{3}-\d+) \|")


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


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s))


def summary() -> str:
    text = DOC.read_text(encoding="utf-8")
    seeds: dict[str, dict[str, int]] = {}
    for found in re.finditer(r"^\| (\d{3})-\d+ \|(.*)$", text, re.M):
        status = found.group(2).split(" | ")[2].strip()
        seed = seeds.setdefault(found.group(1), {})
        seed[status] = seed.get(status, 0) + 1
    total: dict[str, int] = {}
    parts = []
    for name, counts in sorted(seeds.items()):
        for status, n in counts.items():
            total[status] = total.get(status, 0) + n
        parts.append(f"{name} — {sum(counts.values())} ({_counts(counts)})")
    line = (
        "Rows per seed: "
        + " · ".join(parts)
        + f" · total {sum(total.values())} ({_counts(total)})."
    )
    DOC.write_text(re.sub(r"^Rows per seed:.*$", line, text, flags=re.M), encoding="utf-8")
    return line


if __name__ == "__main__":
    if sys.argv[1:2] == ["mark"]:
        mark(sys.argv[2])
    print(summary())
