"""Mark docs/conformance.md rows done: `python scripts/conformance_mark.py marks.tsv` (id<TAB>tests)."""

from __future__ import annotations

import re
import sys

marks = dict(line.split("\t", 1) for line in open(sys.argv[1]).read().strip().split("\n"))
p = "docs/conformance.md"
out = []
for line in open(p):
    m = re.match(r"\| (\d{3}-\d+) \|", line)
    if m and m.group(1) in marks:
        cells = line.rstrip("\n").split(" | ")
        # cells: ['| id', req, scen, status, test, notes |]
        cells[3] = "done"
        cells[4] = marks[m.group(1)]
        line = " | ".join(cells) + "\n"
    out.append(line)
open(p, "w").writelines(out)
