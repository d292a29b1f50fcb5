"""SPLADE-tiny as a float32 ONNX graph, built from its ``model.safetensors`` and
``config.json`` with ``onnx.helper`` (no torch): a BERT encoder, its masked-language-model
head, and SPLADE's pooling.

A text's weight for vocabulary term ``j`` is ``max over tokens t of log(1 + ReLU(logit
t, j))``. The graph takes one text a run, unpadded (``input_ids`` of shape ``[1, S]``),
so every position is a real token and the attention mask of a padded batch is not
needed. Two rewrites make it cheaper without changing what it computes:

- the max over tokens comes first: ``log(1 + ReLU(x))`` never decreases, so the max of
  it is it of the max, and the decoder's bias (one per term) is added after the max;
  the ``S x 30,522`` logits are only reduced, never activated;
- the query weights carry the attention's ``1 / sqrt(head size)`` (a power of two here:
  exact), and the token-type embedding of segment 0 is added into the position table.

The GELUs are exported as ``x * (0.5 * (1 + erf(x / sqrt 2)))``, the form
``onnx_int8.derive`` fuses. The tied decoder is the word-embedding matrix transposed.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["BertShape", "build", "read_safetensors"]

Floats = npt.NDArray[np.float32]

#: The ONNX operator set the graph is written in (LayerNormalization is in 17).
_OPSET = 17


@dataclass(frozen=True, slots=True)
class BertShape:
    """What the graph needs of a ``config.json`` (a ``BertForMaskedLM``)."""

    hidden: int
    layers: int
    heads: int
    vocab: int
    positions: int
    eps: float

    @classmethod
    def of_config(cls, raw: bytes) -> BertShape:
        """From ``config.json``; ``ValueError`` when it is not a BERT masked-LM whose
        graph this module can build (erf GELU, absolute positions, tied decoder)."""
        config = json.loads(raw)
        wanted = {
            "model_type": "bert",
            "hidden_act": "gelu",
            "position_embedding_type": "absolute",
            "tie_word_embeddings": True,
        }
        for key, value in wanted.items():
            if config.get(key, value) != value:
                raise ValueError(f"config.json: {key} is {config.get(key)!r}, not {value!r}")
        shape = cls(
            hidden=int(config["hidden_size"]),
            layers=int(config["num_hidden_layers"]),
            heads=int(config["num_attention_heads"]),
            vocab=int(config["vocab_size"]),
            positions=int(config["max_position_embeddings"]),
            eps=float(config["layer_norm_eps"]),
        )
        if shape.hidden % shape.heads:
            raise ValueError("config.json: hidden_size is not a multiple of the heads")
        return shape


def read_safetensors(raw: bytes) -> dict[str, Floats]:
    """The float32 tensors of a safetensors file, as read-only arrays over ``raw``.

    The format: an 8-byte little-endian header length, a JSON header naming each
    tensor's dtype, shape and byte range, then the bytes. ``ValueError`` on anything
    else than float32 tensors inside the file."""
    if len(raw) < 8:
        raise ValueError("safetensors: too short")
    (size,) = struct.unpack("<Q", raw[:8])
    if size > len(raw) - 8:
        raise ValueError("safetensors: header longer than the file")
    header = json.loads(raw[8 : 8 + size])
    body = memoryview(raw)[8 + size :]
    tensors: dict[str, Floats] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"safetensors: {name} is {info['dtype']}, not F32")
        start, end = info["data_offsets"]
        count = math.prod(info["shape"])
        if not 0 <= start <= end <= len(body) or end - start != 4 * count:
            raise ValueError(f"safetensors: {name} has a bad byte range")
        array = np.frombuffer(body[start:end], dtype="<f4").reshape(info["shape"])
        tensors[name] = array
    return tensors


def build(weights: Mapping[str, Floats], shape: BertShape) -> bytes:
    """The float32 graph (module docstring): input ``input_ids`` (int64, ``[1, S]``, S
    at most ``shape.positions``), output ``weights`` (float32, ``[1, vocab]``).
    ``KeyError`` when a tensor is missing."""
    return _Builder(weights, shape).model()


class _Builder:
    """Adds nodes and initializers; each node's output is a fresh name."""

    def __init__(self, weights: Mapping[str, Floats], shape: BertShape) -> None:
        self._w, self._shape = weights, shape
        self._nodes: list[Any] = []
        self._inits: list[Any] = []
        self._count = 0

    def _init(self, name: str, value: npt.ArrayLike, dtype: type[np.generic]) -> str:
        from onnx import numpy_helper

        array = np.ascontiguousarray(np.asarray(value, dtype=dtype))
        self._inits.append(numpy_helper.from_array(array, name))
        return name

    def _floats(self, name: str, value: npt.ArrayLike) -> str:
        return self._init(name, value, np.float32)

    def _node(self, op: str, inputs: list[str], **attributes: Any) -> str:
        from onnx import helper

        self._count += 1
        out = f"t{self._count}"
        node = helper.make_node(op, inputs, [out], name=f"{op}_{self._count}", **attributes)
        self._nodes.append(node)
        return out

    def _linear(self, x: str, prefix: str, scale: float = 1.0) -> str:
        """``x @ W.T + b`` of the torch ``Linear`` named ``prefix``."""
        w = self._floats(f"{prefix}.weight", self._w[f"{prefix}.weight"].T * scale)
        b = self._floats(f"{prefix}.bias", self._w[f"{prefix}.bias"] * scale)
        return self._node("Add", [self._node("MatMul", [x, w]), b])

    def _layer_norm(self, x: str, prefix: str) -> str:
        gamma = self._floats(f"{prefix}.gamma", self._w[f"{prefix}.gamma"])
        beta = self._floats(f"{prefix}.beta", self._w[f"{prefix}.beta"])
        return self._node("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=self._shape.eps)

    def _gelu(self, x: str) -> str:
        scaled = self._node("Div", [x, "sqrt2"])
        half = self._node("Mul", ["half", self._node("Add", [self._node("Erf", [scaled]), "one"])])
        return self._node("Mul", [x, half])

    def _attention(self, x: str, prefix: str) -> str:
        size = self._shape.hidden // self._shape.heads
        split = [
            self._node("Reshape", [self._linear(x, f"{prefix}.{part}", scale), "heads"])
            for part, scale in (("query", 1 / math.sqrt(size)), ("key", 1.0), ("value", 1.0))
        ]
        query = self._node("Transpose", [split[0]], perm=[0, 2, 1, 3])
        key = self._node("Transpose", [split[1]], perm=[0, 2, 3, 1])
        value = self._node("Transpose", [split[2]], perm=[0, 2, 1, 3])
        probs = self._node("Softmax", [self._node("MatMul", [query, key])], axis=-1)
        mixed = self._node("Transpose", [self._node("MatMul", [probs, value])], perm=[0, 2, 1, 3])
        return self._node("Reshape", [mixed, "joined"])

    def model(self) -> bytes:
        from onnx import TensorProto, checker, helper

        shape, w = self._shape, self._w
        self._floats("sqrt2", math.sqrt(2))
        self._floats("one", 1.0)
        self._floats("half", 0.5)
        self._init("heads", [0, -1, shape.heads, shape.hidden // shape.heads], np.int64)
        self._init("joined", [0, -1, shape.hidden], np.int64)
        self._init("zero", [0], np.int64)
        embeddings = "bert.embeddings"
        words = self._floats("words", w[f"{embeddings}.word_embeddings.weight"])
        positions = self._floats(
            "positions",
            w[f"{embeddings}.position_embeddings.weight"]
            + w[f"{embeddings}.token_type_embeddings.weight"][0],
        )
        length = self._node("Shape", ["input_ids"], start=1, end=2)
        placed = self._node("Slice", [positions, "zero", length, "zero"])
        x = self._node("Add", [self._node("Gather", [words, "input_ids"]), placed])
        x = self._layer_norm(x, f"{embeddings}.LayerNorm")
        for layer in range(shape.layers):
            prefix = f"bert.encoder.layer.{layer}"
            attended = self._attention(x, f"{prefix}.attention.self")
            x = self._node("Add", [self._linear(attended, f"{prefix}.attention.output.dense"), x])
            x = self._layer_norm(x, f"{prefix}.attention.output.LayerNorm")
            up = self._gelu(self._linear(x, f"{prefix}.intermediate.dense"))
            x = self._node("Add", [self._linear(up, f"{prefix}.output.dense"), x])
            x = self._layer_norm(x, f"{prefix}.output.LayerNorm")
        head = "cls.predictions"
        x = self._gelu(self._linear(x, f"{head}.transform.dense"))
        x = self._layer_norm(x, f"{head}.transform.LayerNorm")
        decoder = self._floats("decoder", w[f"{embeddings}.word_embeddings.weight"].T)
        logits = self._node("MatMul", [x, decoder])
        peak = self._node("ReduceMax", [logits], axes=[1], keepdims=0)
        peak = self._node("Add", [peak, self._floats("decoder.bias", w[f"{head}.bias"])])
        activated = self._node("Add", [self._node("Relu", [peak]), "one"])
        self._nodes.append(helper.make_node("Log", [activated], ["weights"], name="Log_out"))
        graph = helper.make_graph(
            self._nodes,
            "splade",
            [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "tokens"])],
            [helper.make_tensor_value_info("weights", TensorProto.FLOAT, [1, shape.vocab])],
            self._inits,
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", _OPSET)], producer_name="mnemo"
        )
        model.ir_version = 8  # what onnxruntime 1.18, the oldest allowed, reads
        checker.check_model(model)
        return bytes(model.SerializeToString())
