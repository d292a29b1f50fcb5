"""Recount the Summary line of docs/conformance.md: `python scripts/conformance_summary.py`."""

from __future__ import annotations

import re

p = "docs/conformance.md"
s = open(p).read()
counts = {}
for m in re.finditer(r"^\| (\d{3})-\d+ \|(.*)$", s, re.M):
    status = m.group(2).split(" | ")[2].strip()
    c = counts.setdefault(m.group(1), {})
    c[status] = c.get(status, 0) + 1
parts = []
tot = {}
for seed in sorted(counts):
    c = counts[seed]
    n = sum(c.values())
    for k, v in c.items():
        tot[k] = tot.get(k, 0) + v
    parts.append(
        f"{seed} — {n} ("
        + ", ".join(f"{c[k]} {k}" for k in ("done", "open", "superseded") if c.get(k))
        + ")"
    )
total = sum(tot.values())
line = (
    "Rows per seed: "
    + " · ".join(parts)
    + f" · total {total} ("
    + ", ".join(f"{tot[k]} {k}" for k in ("done", "open", "superseded") if tot.get(k))
    + ")."
)
s = re.sub(r"^Rows per seed:.*$", line, s, flags=re.M)
open(p, "w").write(s)
print(line)
