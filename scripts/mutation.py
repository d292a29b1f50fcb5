"""Mutation testing of the pure core with mutmut (not part of the default suite).

python scripts/mutation.py run conflicts facts      # mutate these memory/ modules, 1 worker
python scripts/mutation.py run actors.context       # actors/context.py (or actors.keeper)
python scripts/mutation.py run --all                # every mutated module (hours on 2 cores)
python scripts/mutation.py rerun conflicts facts    # check their survivors again (new tests)
python scripts/mutation.py report                   # write bench/results/mutation.json

``[tool.mutmut]`` in pyproject.toml says what is mutated (``memory/``, and the context
and keeper paths of ``actors/``) and which tests run (the in-process ones). mutmut keeps
its state in ``mutants/``: a second ``run`` only checks mutants it has not checked yet.
``report`` counts every module that has results, killed/total per module, and lists the
survivors by name; ``mutmut show <name>`` prints one's diff.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
RESULT = ROOT / "bench" / "results" / "mutation.json"

# mutmut's exit codes (mutmut/stats.py): 1 and 3 kill, 0 survives, 33/5 no tests ran.
_STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no_tests", 33: "no_tests", 34: "skipped"}
_TIMEOUT = {24, -24, 36, 152, 255}


def _status(code: int | None) -> str:
    if code is None:
        return "not_checked"
    if code in _TIMEOUT:
        return "timeout"
    return _STATUS.get(code, "suspicious")


def _mutmut_run(names: list[str], workers: int) -> int:
    mutmut = Path(sys.executable).with_name("mutmut")
    command = [str(mutmut), "run", "--max-children", str(workers), *names]
    return subprocess.run(command, cwd=ROOT, check=False).returncode


def _pattern(module: str) -> str:
    """mutmut's name pattern of a module: ``conflicts`` is memory's, ``actors.keeper`` as is."""
    return f"{module}.*" if "." in module else f"memory.{module}.*"


def _meta(module: str) -> Path:
    package, _, name = module.rpartition(".")
    return MUTANTS / (package or "memory") / f"{name}.py.meta"


def run(modules: list[str], workers: int) -> int:
    return _mutmut_run([_pattern(m) for m in modules] if modules else [], workers)


def rerun(modules: list[str], workers: int) -> int:
    """Check again the mutants of ``modules`` that survived or had no test: after tests
    were added, without checking every killed one again."""
    names: list[str] = []
    for module in modules:
        codes = json.loads(_meta(module).read_text(encoding="utf-8"))["exit_code_by_key"]
        names += [k for k, c in codes.items() if _status(c) in {"survived", "no_tests"}]
    return _mutmut_run(names, workers) if names else 0


def _tally(
    metas: list[Path], name: Callable[[Path], str]
) -> tuple[dict[str, object], dict[str, object]]:
    """Per-module results of ``metas`` and their totals."""
    modules: dict[str, object] = {}
    totals: Counter[str] = Counter()
    for meta in metas:
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        statuses = {key: _status(code) for key, code in codes.items()}
        counts = Counter(statuses.values())
        checked = sum(n for s, n in counts.items() if s != "not_checked")
        if not checked:
            continue
        # A mutant that makes the tests hang was caught by them: timeouts count as killed.
        killed = counts["killed"] + counts["timeout"]
        modules[name(meta)] = {
            "total": len(codes),
            "checked": checked,
            "killed": killed,
            "score": round(killed / checked, 4),
            **{s: n for s, n in sorted(counts.items()) if s not in {"killed"}},
            "survivors": sorted(k for k, s in statuses.items() if s == "survived"),
        }
        totals.update(counts)
        totals["total"] += len(codes)
    checked = totals["total"] - totals["not_checked"]
    killed = totals["killed"] + totals["timeout"]
    summary = {
        "checked": checked,
        "killed": killed,
        "score": round(killed / checked, 4) if checked else None,
        # Over every mutant, the unchecked ones counted as not killed.
        "score_of_all": round(killed / totals["total"], 4) if totals["total"] else None,
        **{k: v for k, v in sorted(totals.items()) if k != "killed"},
    }
    return modules, summary


def report() -> dict[str, object]:
    """memory/'s modules by file name, and actors/ (its context and keeper paths)."""
    memory, memory_totals = _tally(
        sorted((MUTANTS / "memory").glob("*.py.meta")), lambda m: m.name.removesuffix(".meta")
    )
    actors, actors_totals = _tally(
        sorted((MUTANTS / "actors").glob("*.py.meta")),
        lambda m: "actors/" + m.name.removesuffix(".meta"),
    )
    return {
        "tool": "mutmut " + _mutmut_version(),
        "command": "python scripts/mutation.py run <modules> (1 worker); report",
        "memory": memory_totals,
        "actors": actors_totals,
        "modules": memory | actors,
    }


def _mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


def main(argv: list[str]) -> int:
    match argv:
        case ["run", "--all"]:
            return run([], workers=1)
        case ["run", *modules] if modules:
            return run(modules, workers=1)
        case ["rerun", *modules] if modules:
            return rerun(modules, workers=1)
        case ["report"]:
            result = report()
            RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
            print(json.dumps({k: result[k] for k in ("memory", "actors")}, indent=2))
            return 0
        case _:
            print(__doc__, file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
