"""docs/conformance.md: every done row names tests that exist; its summary only reads."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "conformance.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_script", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules[spec.name]


def test_every_done_row_names_tests_that_exist_in_the_suite() -> None:
    conformance = _script()
    text = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    assert conformance.missing_tests(text) == []
    done = [row for row in conformance.rows(text) if row.status == "done"]
    assert len(done) > 100  # the rows were parsed, not skipped


def test_a_done_row_naming_a_missing_test_or_none_is_reported(tmp_path: Path) -> None:
    conformance = _script()
    (tmp_path / "test_alpha.py").write_text("async def test_real() -> None:\n    pass\n")
    text = (
        "| 000-01 | r | s | done | `test_alpha::test_real` | n |\n"
        "| 000-02 | r | s | done | `test_alpha::test_gone` | n |\n"
        "| 000-03 | r | s | done | `test_alpha` (a whole module) | n |\n"
        "| 000-04 | r | s | open | — | n |\n"
    )
    assert conformance.missing_tests(text, tmp_path) == [
        "000-02: test_alpha::test_gone not found in test_alpha.py",
        "000-03: done but names no test_module::test_function",
    ]


def test_the_summary_line_matches_the_rows_and_the_summary_command_writes_nothing() -> None:
    doc = ROOT / "docs" / "conformance.md"
    before = doc.read_bytes()
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "check"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = subprocess.run(
        [sys.executable, str(SCRIPT), "summary"], capture_output=True, text=True, timeout=60
    )
    assert summary.returncode == 0, summary.stderr
    assert summary.stdout.startswith("Rows per seed: ")
    assert summary.stdout.strip() in before.decode("utf-8")
    assert doc.read_bytes() == before
