"""The retrieval bench's printed table and its plot of latency against store size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["METRICS", "table", "write_plot"]

#: Timed calls per query: result key -> column name.
METRICS = {
    "search_messages_ms": "search_messages",
    "search_facts_ms": "search_facts",
    "embed_search_ms": "embed+search",
    "context_ms": "context build",
}


def table(result: dict[str, Any]) -> list[str]:
    setup = result["setup"]
    lines = [
        f"retrieval: {setup['queries']} LoCoMo questions per size, one at a time, from "
        "in-memory indexes; "
        f"{setup['cores']} cores, {setup['cpu']}; load {setup['load_before']:.2f} -> "
        f"{setup['load_after']:.2f}",
        "stored memory = archived message; + up to "
        f"{setup['facts_per_user']} facts per user; messages k=10, facts k=50; ms p50/p95/p99",
        f"{'rows':>9} {'users':>5} {'facts':>7} {'build s':>7}  "
        + "  ".join(f"{name:>20}" for name in METRICS.values()),
    ]
    for s in result["scenarios"]:
        cells = [
            f"{s[key]['p50']:5.1f}/{s[key]['p95']:5.1f}/{s[key]['p99']:6.1f}" for key in METRICS
        ]
        lines.append(
            f"{s['rows']:>9,} {s['users']:>5} {s['facts']:>7,} {s['build']['seconds']:>7.0f}  "
            + "  ".join(f"{c:>20}" for c in cells)
        )
    for s in result["scenarios"]:
        load = s["index_load_ms"]
        lines.append(
            f"{s['rows']:,} rows: loading {s['users']} user(s) into memory took "
            f"{s['index_load_all_s']:.1f} s (per user p50 {load['p50']:.0f} ms, max "
            f"{load['max']:.0f} ms), {s['index_mb']:,.0f} MiB of index"
        )
        if (recall := s.get("projection_recall_at_10")) is not None:
            lines.append(
                f"  vector side ranked by projection first: recall@10 against exact "
                f"{recall['mean']:.3f} (min {recall['min']:.1f}, {recall['queries']} queries)"
            )
    e = result["query_embedding_ms"]
    lines.append(
        f"query embedding (ONNX MiniLM, {result['query_words']:.1f} words): "
        f"p50 {e['p50']:.1f}  p95 {e['p95']:.1f}  p99 {e['p99']:.1f} ms"
    )
    for i in result["ingest"]:
        lines.append(
            f"ingest through ArchiveWriter ({i['embedder']}): {i['rows_per_s']:,.0f} rows/s "
            f"acked ({i['rows']:,} rows in {i['batches']} batches), "
            f"{i.get('rows_per_s_into_table', float('nan')):,.0f} rows/s into the table"
        )
    for s in result["scenarios"]:
        b = s["build"]
        unindexed = sum(s["unindexed_rows"].values())
        lines.append(
            f"bulk append_messages at {s['rows']:,}: {b['append_rows_per_s']:,.0f} rows/s; "
            f"optimize {b['optimize_s']:.1f} s; rows left unindexed: {unindexed}"
        )
    return lines


def write_plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = result["scenarios"]
    labels = [f"{s['rows']:,}\n{s['users']} user(s)" for s in scenarios]
    fig, ax = plt.subplots(figsize=(8, 5))
    for key, name in METRICS.items():
        p95 = [s[key]["p95"] for s in scenarios]
        p50 = [s[key]["p50"] for s in scenarios]
        (line,) = ax.plot(labels, p95, marker="o", label=f"{name} p95")
        ax.plot(labels, p50, marker=".", linestyle=":", color=line.get_color(), label=f"{name} p50")
    targets = {100_000: 20.0, 1_000_000: 40.0}
    for i, s in enumerate(scenarios):
        if s["rows"] in targets:
            ax.scatter([i], [targets[s["rows"]]], marker="_", s=600, color="red", zorder=3)
    ax.set_ylabel("latency (ms)")
    ax.set_xlabel("stored messages (red: embed+search p95 target)")
    ax.set_title(f"mnemo retrieval, {result['setup']['cores']} cores")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
