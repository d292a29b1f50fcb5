"""The real models of testing/llama on this machine: load, speed, and mnemo's extraction call.

    python -m bench.real_model [--models smollm2:135m qwen2.5-coder:1.5b] [--num-predict 1024]

For each model (fetched first if missing; Qwen 1.5B is 1.1 GB): the time to load it
(``load_duration`` of an empty chat), generation and prompt speed on one thread
(``eval_count / eval_duration`` of a 128-token story, ``prompt_eval_count /
prompt_eval_duration`` of mnemo's extraction prompt), and mnemo's extraction call as
mnemo makes it (the body ``OllamaLlm.generate_json`` sends: ``extraction_prompt``,
the ``Extraction`` schema as ``format``, temperature 0) three times: cold (after a chat
took the context), warm (another conversation: only the static prompt prefix is kept)
and repeated (the same conversation again). Each answer is decoded as mnemo decodes
it. Every call stops at ``--num-predict`` tokens (a Modelfile's ``PARAMETER
num_predict``; mnemo sets no limit), so a model that goes on and on costs at most that.
Writes ``bench/results/real_model.json`` (``real_model-root-ref.json`` with
``--schema root-ref``: msgspec's schema as it comes, with a root ``$ref``, which
llama.cpp's converter does not resolve all the way down).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import anyio
import httpx
import msgspec

from bench.common import machine, write_result
from memory.model_answers import answer_schema
from memory.prompts import Exchange, extraction_prompt
from schemas.llm import Extraction
from schemas.settings import Settings
from testing.downloads import MODELS, ModelSpec
from testing.real_model import serve_models

_CONVERSATIONS = [
    Exchange(1, "Hi, I'm Ada. I live in Berlin and I'm allergic to peanuts.", "Noted, Ada!"),
    Exchange(1, "I work at Siemens. My sister Ana is a nurse in Lyon.", "Lyon is lovely."),
]
_STORY = "Write a story about a lighthouse keeper."
#: The schema mnemo's extraction sends (``actors.extraction``) ...
_SENT = answer_schema(Extraction)
#: ... and msgspec's as it comes, with a root ``$ref`` (``--schema root-ref``).
_ROOT_REF = msgspec.json.schema(Extraction)


async def _chat(http: httpx.AsyncClient, model: str, **body: Any) -> dict[str, Any]:
    answer = await http.post("/api/chat", json={"model": model, "stream": False, **body})
    answer.raise_for_status()
    result: dict[str, Any] = answer.json()
    return result


async def _extraction(
    http: httpx.AsyncClient, model: str, exchange: Exchange, schema: dict[str, Any]
) -> dict[str, Any]:
    """mnemo's extraction call, as ``OllamaLlm.generate_json`` sends it, timed."""
    categories = [c.name for c in Settings().categories]
    system, prompt = extraction_prompt([exchange], categories=categories)
    started = time.perf_counter()
    done = await _chat(
        http,
        model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
        format=schema,
        options={"temperature": 0},
    )
    seconds = time.perf_counter() - started
    raw = done["message"]["content"]
    try:
        facts = msgspec.json.decode(raw, type=Extraction).facts
        outcome = f"decoded, {len(facts)} facts"
        said = [f"{f.subject} | {f.predicate} | {f.value} ({f.confidence})" for f in facts]
    except msgspec.DecodeError as exc:
        outcome, said = f"invalid: {exc}", [raw[:300]]
    return {
        "seconds": round(seconds, 2),
        "prompt_tokens": done["prompt_eval_count"],
        "cached_tokens": done["prompt_eval_cached_count"],
        "prompt_seconds": round(done["prompt_eval_duration"] / 1e9, 2),
        "answer_tokens": done["eval_count"],
        "answer_seconds": round(done["eval_duration"] / 1e9, 2),
        "done_reason": done["done_reason"],
        "outcome": outcome,
        "said": said,
    }


async def _measure(spec: ModelSpec, url: str, schema: dict[str, Any]) -> dict[str, Any]:
    name = spec.name
    async with httpx.AsyncClient(base_url=url, timeout=3600) as http:
        await _chat(http, name, messages=[], keep_alive=0)  # unloaded
        load = await _chat(http, name, messages=[])
        story = await _chat(
            http,
            name,
            messages=[{"role": "user", "content": _STORY}],
            options={"num_predict": 128, "temperature": 0},
        )
        calls = {
            "cold": await _extraction(http, name, _CONVERSATIONS[0], schema),
            "warm": await _extraction(http, name, _CONVERSATIONS[1], schema),
            "repeated": await _extraction(http, name, _CONVERSATIONS[1], schema),
        }
        system, prompt = extraction_prompt(
            [_CONVERSATIONS[0]], categories=[c.name for c in Settings().categories]
        )
        await _chat(http, name, messages=[{"role": "user", "content": "Hi"}])  # takes the context
        long = await _chat(
            http,
            name,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
            options={"num_predict": 1},
        )
    return {
        "load_seconds": round(load["load_duration"] / 1e9, 2),
        "generation_tokens_per_second": round(
            story["eval_count"] / story["eval_duration"] * 1e9, 1
        ),
        "extraction_prompt_tokens": long["prompt_eval_count"],
        "prompt_tokens_per_second": round(
            long["prompt_eval_count"] / long["prompt_eval_duration"] * 1e9, 1
        ),
        "extraction_calls": calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--num-predict", type=int, default=1024)
    parser.add_argument("--schema", choices=["as-sent", "root-ref"], default="as-sent")
    args = parser.parse_args()
    schema = _SENT if args.schema == "as-sent" else _ROOT_REF
    results: dict[str, Any] = {}
    for name in args.models:
        spec = MODELS[name]
        with serve_models(spec, parameters={"num_predict": args.num_predict}) as url:
            results[name] = anyio.run(_measure, spec, url, schema)
        row = results[name]
        print(
            f"{name}: load {row['load_seconds']} s, {row['generation_tokens_per_second']} tok/s "
            f"generation, {row['prompt_tokens_per_second']} tok/s prompt "
            f"({row['extraction_prompt_tokens']} tokens)"
        )
        for kind, call in row["extraction_calls"].items():
            print(
                f"  extraction {kind}: {call['seconds']} s = prompt {call['prompt_seconds']} s "
                f"({call['prompt_tokens']} tokens, {call['cached_tokens']} kept) + answer "
                f"{call['answer_seconds']} s ({call['answer_tokens']} tokens, "
                f"{call['done_reason']}): {call['outcome'][:80]}"
            )
    path = write_result(
        "real_model" if args.schema == "as-sent" else "real_model-root-ref",
        {
            "setup": {
                "machine": machine(),
                "threads": 1,
                "num_predict": args.num_predict,
                "schema": args.schema,
                "runtime": "node-llama-cpp 3.21.1 (llama.cpp CPU), testing/llama",
            },
            "models": results,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
