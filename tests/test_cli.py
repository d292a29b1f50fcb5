"""The ``mnemo`` command's own manners: version, start-up line, closed pipes."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from bench.common import free_port
from server.cli import describe_start, main
from testing.fake_ollama import FakeOllama
from testing.fake_openai import FakeOpenAi
from tests.harness import settings_for


def test_mnemo_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == "mnemo 0.1.0"


@pytest.mark.anyio
async def test_the_start_up_line_names_data_embedder_models_and_an_answering_ollama(
    tmp_path: Path, fake: FakeOllama
) -> None:
    settings = settings_for(tmp_path, fake.url)
    where = await anyio.Path(tmp_path).resolve()
    level, line = await anyio.to_thread.run_sync(describe_start, settings)
    assert level == logging.INFO
    assert f"data in {where}" in line
    assert "embedder hash" in line
    assert f"at {fake.url}: answering (Ollama" in line


@pytest.mark.anyio
async def test_the_start_up_line_names_an_answering_openai_compatible_server(
    tmp_path: Path,
) -> None:
    async with FakeOpenAi(models=["llama3.2", "qwen2.5"]) as fake:
        settings = settings_for(tmp_path, f"{fake.url}/v1", llm_api="openai")
        level, line = await anyio.to_thread.run_sync(describe_start, settings)
    assert level == logging.INFO
    assert f"at {fake.url}/v1: answering (an OpenAI-compatible server with 2 models)" in line


def test_the_start_up_line_warns_when_ollama_does_not_answer(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    level, line = describe_start(settings_for(tmp_path, url))
    assert level == logging.WARNING
    assert f"at {url}: not answering" in line
    assert "llm_unavailable" in line
