"""SPLADE-tiny's forward pass written out in NumPy (float64) from the safetensors, as
``BertForMaskedLM`` computes it, to check the ONNX graphs against: embeddings, BERT
layers, the MLM head with the tied decoder, then SPLADE's max over tokens of
``log(1 + ReLU(logits))``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from server.adapters.splade_graph import BertShape

__all__ = ["splade_weights"]

Array = npt.NDArray[np.float64]
_erf = np.frompyfunc(math.erf, 1, 1)


def _layer_norm(x: Array, gamma: Array, beta: Array, eps: float) -> Array:
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    normed: Array = (x - mean) / np.sqrt(variance + eps) * gamma + beta
    return normed


def _gelu(x: Array) -> Array:
    out: Array = 0.5 * x * (1 + np.asarray(_erf(x / math.sqrt(2)), dtype=np.float64))
    return out


def splade_weights(
    tensors: Mapping[str, npt.NDArray[np.float32]], shape: BertShape, ids: Sequence[int]
) -> Array:
    """Every vocabulary term's weight for one text's token ids."""
    w = {name: np.asarray(value, dtype=np.float64) for name, value in tensors.items()}

    def linear(x: Array, name: str) -> Array:
        out: Array = x @ w[f"{name}.weight"].T + w[f"{name}.bias"]
        return out

    def norm(x: Array, name: str) -> Array:
        return _layer_norm(x, w[f"{name}.gamma"], w[f"{name}.beta"], shape.eps)

    n, heads = len(ids), shape.heads
    size = shape.hidden // heads
    x = (
        w["bert.embeddings.word_embeddings.weight"][list(ids)]
        + w["bert.embeddings.position_embeddings.weight"][:n]
        + w["bert.embeddings.token_type_embeddings.weight"][0]
    )
    x = norm(x, "bert.embeddings.LayerNorm")
    for layer in range(shape.layers):
        prefix = f"bert.encoder.layer.{layer}"
        q, k, v = (
            linear(x, f"{prefix}.attention.self.{part}").reshape(n, heads, size).transpose(1, 0, 2)
            for part in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        attended = (probs @ v).transpose(1, 0, 2).reshape(n, shape.hidden)
        x = norm(
            linear(attended, f"{prefix}.attention.output.dense") + x,
            f"{prefix}.attention.output.LayerNorm",
        )
        up = _gelu(linear(x, f"{prefix}.intermediate.dense"))
        x = norm(linear(up, f"{prefix}.output.dense") + x, f"{prefix}.output.LayerNorm")
    head = norm(
        _gelu(linear(x, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm"
    )
    logits = head @ w["bert.embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]
    weights: Array = np.log1p(np.maximum(logits, 0.0)).max(axis=0)
    return weights
