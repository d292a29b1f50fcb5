"""The per-connection timer behind ``mnemo_chat_overhead_ms``: what it counts and forgets."""

from __future__ import annotations

from schemas.wire import Delta, Done, ErrorFrame, Usage
from server.metrics import Metrics
from server.ws import _OUTBOX_SIZE, _FirstDeltas


def _observed(metrics: Metrics) -> tuple[float, float]:
    count = metrics.registry.get_sample_value("mnemo_chat_overhead_ms_count") or 0.0
    total = metrics.registry.get_sample_value("mnemo_chat_overhead_ms_sum") or 0.0
    return count, total


def test_a_streamed_chat_counts_its_first_delta_less_the_models_wait() -> None:
    metrics = Metrics(lambda: 0)
    timer = _FirstDeltas(metrics)
    timer.read("c1", 10.000)
    timer.written(Delta(id="c1", text="Hel"), 10.050)
    timer.written(Delta(id="c1", text="lo"), 10.090)  # only the first delta counts
    timer.written(Done(id="c1", turn=1, usage=Usage(model_first_ms=45.0)), 10.100)
    count, total = _observed(metrics)
    assert count == 1
    assert abs(total - 5.0) < 1e-6  # 50 ms to the first delta, 45 of them the model's


def test_failed_or_empty_chats_count_nothing_and_leave_nothing_behind() -> None:
    metrics = Metrics(lambda: 0)
    timer = _FirstDeltas(metrics)
    timer.read("failed", 1.0)
    timer.written(ErrorFrame(id="failed", code="llm_error", message="down"), 1.2)
    timer.read("empty", 2.0)
    timer.written(Done(id="empty", turn=1), 2.1)  # the model said nothing: no delta
    timer.read("broken", 3.0)
    timer.written(Delta(id="broken", text="Hi"), 3.1)
    timer.written(ErrorFrame(id="broken", code="llm_error", message="cut"), 3.2)
    assert _observed(metrics) == (0.0, 0.0)
    assert timer._read == {}
    assert timer._written == {}


def test_chats_that_never_end_are_forgotten_oldest_first() -> None:
    timer = _FirstDeltas(Metrics(lambda: 0))
    for i in range(_OUTBOX_SIZE + 10):
        timer.read(f"c{i}", float(i))
    assert len(timer._read) == _OUTBOX_SIZE
    assert "c0" not in timer._read
    assert f"c{_OUTBOX_SIZE + 9}" in timer._read


def test_a_chat_forgotten_after_its_first_delta_ends_without_being_counted() -> None:
    metrics = Metrics(lambda: 0)
    timer = _FirstDeltas(metrics)
    timer.read("slow", 0.0)
    timer.written(Delta(id="slow", text="Hi"), 0.1)
    for i in range(_OUTBOX_SIZE):
        timer.read(f"c{i}", 1.0 + i)
    timer.written(Done(id="slow", turn=1, usage=Usage(model_first_ms=1.0)), 9.0)
    assert _observed(metrics) == (0.0, 0.0)
    assert "slow" not in timer._written
