"""The benchmarks' reading of ``/metrics`` histograms."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from bench.common import histograms


def test_a_histogram_is_read_by_label_with_its_count_sum_and_buckets() -> None:
    registry = CollectorRegistry()
    timed = Histogram("mnemo_x_ms", "x", ["tool"], buckets=(5, 50), registry=registry)
    for tool, ms in [("search", 3.0), ("search", 20.0), ("store", 70.0)]:
        timed.labels(tool=tool).observe(ms)
    read = histograms(generate_latest(registry).decode(), "mnemo_x_ms", "tool")
    assert read["search"] == {
        "le_5.0": 1.0,
        "le_50.0": 2.0,
        "le_+Inf": 2.0,
        "count": 2.0,
        "sum": 23.0,
    }
    assert read["store"]["le_50.0"] == 0.0
    assert (read["store"]["count"], read["store"]["sum"]) == (1.0, 70.0)
