"""Write the predicate table of docs/memory.md from the built-in vocabulary.

python scripts/predicate_table.py   # rewrites the table in place
"""

from __future__ import annotations

from pathlib import Path

from schemas.predicates import DEFAULT_PREDICATES

DOC = Path(__file__).resolve().parent.parent / "docs" / "memory.md"
HEADER = "| predicate | values | category | what | relations | also written |"


def table() -> str:
    rows = [HEADER, "|---|---|---|---|---|---|"]
    for spec in DEFAULT_PREDICATES:
        relations = []
        if spec.keyed:
            relations.append("one per `key`")
        if spec.opposite:
            relations.append(f"opposite `{spec.opposite}`")
        if spec.family:
            relations.append(f"family `{spec.family}`")
        aliases = ", ".join(f"`{a}`" for a in spec.aliases[:4])
        if len(spec.aliases) > 4:
            aliases += ", …"
        rows.append(
            f"| `{spec.name}` | {spec.cardinality} | {spec.category} | {spec.description} "
            f"| {'; '.join(relations)} | {aliases} |"
        )
    return "\n".join(rows)


def main() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(HEADER)
    end = text.index("\n\n", start)
    DOC.write_text(text[:start] + table() + text[end:], encoding="utf-8")


if __name__ == "__main__":
    main()
