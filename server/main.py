"""Wiring the real adapters from ``Settings``: the app ``mnemo serve`` runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette

from actors.ports import Embedder, Llm, SparseEncoder
from memory.hashing import HashEmbedder, HashSparseEncoder
from schemas.settings import Settings
from server.adapters.lance_store import LanceStore
from server.adapters.ollama import OllamaEmbedder, OllamaLlm
from server.adapters.openai_compat import OpenAiLlm
from server.app import create_app
from server.datadir import local_dir, tables_uri

if TYPE_CHECKING:
    from server.cluster.node import ClusterNode

__all__ = ["build_app", "build_embedder", "build_llm", "build_store"]


def build_embedder(settings: Settings) -> Embedder:
    kind = settings.embedder
    if kind == "hash":
        return HashEmbedder()
    if kind.startswith("ollama:"):
        model = kind.removeprefix("ollama:")
        return OllamaEmbedder(
            settings.llm_url,
            model,
            timeout=settings.llm_timeout,
        )
    from server.adapters.onnx_embedder import OnnxMiniLmEmbedder

    return OnnxMiniLmEmbedder(threads=settings.embed_threads)


def build_llm(settings: Settings) -> Llm:
    """The model of chats, extraction and notes: ``llm_api`` at ``llm_url``."""
    if settings.llm_api == "openai":
        return OpenAiLlm(settings.llm_url, timeout=settings.llm_timeout)
    return OllamaLlm(
        settings.llm_url,
        timeout=settings.llm_timeout,
        first_token_timeout=settings.extract_timeout,
    )


def build_store(
    settings: Settings, embedder: Embedder, cluster: ClusterNode | None = None
) -> LanceStore:
    """The LanceDB store under ``data_dir`` (its journal and saved indexes beside it, or in
    ``local_dir`` for an object-store URI; a cluster node's journal is in the object
    store), its caches sized by ``settings``."""
    local = local_dir(settings.data_dir, settings.local_dir)
    return LanceStore(
        tables_uri(settings.data_dir),
        embedder=embedder,
        cache_bytes=settings.cache_mb << 20,
        journal=cluster.journal if cluster is not None else local / "journal",
        lance_metadata_bytes=settings.lance_metadata_cache_mb << 20,
        lance_index_bytes=settings.lance_index_cache_mb << 20,
        ranking=settings.ranking,
        min_similarity=settings.min_similarity,
        indexes=local / "indexes",
        save_index_from=settings.save_index_from,
        save_index_after=settings.save_index_after,
        project_from=settings.project_from,
        shared=cluster is not None,
        learned=build_sparse_encoder(settings),
    )


def build_sparse_encoder(settings: Settings) -> SparseEncoder | None:
    """The learned sparse model when ``settings.sparse``: SPLADE-tiny, or with the hash
    embedder (tests) its hashing stand-in."""
    if not settings.sparse:
        return None
    if settings.embedder == "hash":
        return HashSparseEncoder()
    from server.adapters.splade import OnnxSpladeEncoder

    return OnnxSpladeEncoder(threads=1)


def build_app(settings: Settings) -> Starlette:
    """The production app: LanceDB under ``data_dir``, the model server at ``llm_url``."""
    embedder = build_embedder(settings)
    cluster = None
    if settings.node:
        from server.cluster.node import ClusterNode

        cluster = ClusterNode(settings)
    store = build_store(settings, embedder, cluster)
    if cluster is not None:
        cluster.keep(store)
    llm = build_llm(settings)
    return create_app(settings, llm=llm, store=store, embedder=embedder, cluster=cluster)
