"""The whole local-reranker path on real GPUs: serve-reranker, the client, truncation, the cache check, the scores.

Needs Linux, an NVIDIA GPU with room for Qwen3-Reranker-8B in BF16 (about 17 GB plus KV cache), the `gpu`
dependency group and access to the Hugging Face Hub. Deselected by default; one command runs it:

    uv run --locked --group gpu pytest -m gpu -s tests/gpu

For each model: a transformers reference is computed first in a subprocess (so its CUDA memory is freed),
following the model card (Qwen3: p(yes) from the yes/no logits at the last position; zerank-2: the raw
`Yes` logit); then `evals-repro serve-reranker <model> --devices 0` starts the real vLLM server; the
client's scores must match the reference (and zerank-2's card example), a 40,000-word document must come
back scored with exactly one truncation, every replica must pass the prefix-cache check, and Ctrl-C
(SIGINT) must stop the replica. `EVALS_REPRO_GPU_DEVICE` picks another GPU than 0.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import ORIGINAL_ENVIRON  # the real Hugging Face Hub settings, not the session's fake Hub

pytestmark = pytest.mark.gpu

DEVICE = os.environ.get("EVALS_REPRO_GPU_DEVICE", "0")
QUERY = "What is the capital of China?"
DOCUMENTS = [
    "The capital of China is Beijing.",
    "Gravity is a force that attracts two bodies towards each other.",
    "Beijing, officially Peking in older texts, has been the seat of the Chinese government for centuries.",
]

# The cards' prompts, written out here (independent of src/): (head with {query}, tail).
QWEN_HEAD = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
    "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
    "<Query>: {query}\n<Document>: "
)
QWEN_TAIL = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
ZERANK_HEAD = "<|im_start|>system\n{query}<|im_end|>\n<|im_start|>user\n"
ZERANK_TAIL = "<|im_end|>\n<|im_start|>assistant\n"

REFERENCE = textwrap.dedent(
    """
    # transformers reference, one pair at a time (no padding), BF16 on the GPU
    import json, sys, torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    spec = json.loads(sys.argv[1])
    tokenizer = AutoTokenizer.from_pretrained(spec["checkpoint"], revision=spec["revision"])
    model = AutoModelForCausalLM.from_pretrained(
        spec["checkpoint"], revision=spec["revision"], torch_dtype=torch.bfloat16
    ).to("cuda").eval()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in spec["tokens"]}
    scores = []
    with torch.no_grad():
        for query, document in spec["pairs"]:
            text = spec["head"].format(query=query) + document + spec["tail"]
            tokens = tokenizer(text, add_special_tokens=False, return_tensors="pt").to("cuda")
            logits = model(**tokens).logits[0, -1].float()
            if spec["rule"] == "p_yes":
                pair = torch.stack([logits[ids["no"]], logits[ids["yes"]]])
                scores.append(torch.softmax(pair, dim=0)[1].item())
            else:
                scores.append(logits[ids["Yes"]].item())
    print(json.dumps({"scores": scores, "ids": ids}))
    """
)


def _requirements() -> None:
    import importlib.util

    from evals_repro.serving.reranker import missing_requirements

    missing = missing_requirements()
    if missing:
        pytest.skip("needs " + "; ".join(missing))
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("needs transformers (installed with the gpu group)")


def reference(spec, pairs, head, tail, rule, tokens) -> dict:
    payload = json.dumps(
        {
            "checkpoint": spec.checkpoint,
            "revision": spec.revision,
            "pairs": pairs,
            "head": head,
            "tail": tail,
            "rule": rule,
            "tokens": tokens,
        }
    )
    env = {**ORIGINAL_ENVIRON, "CUDA_VISIBLE_DEVICES": DEVICE, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    done = subprocess.run(
        [sys.executable, "-c", REFERENCE, payload], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


class Served:
    """`evals-repro serve-reranker NAME --devices DEVICE` in the background, stopped with SIGINT like Ctrl-C."""

    def __init__(self, name: str, log_dir) -> None:
        self.name, self.log_dir = name, log_dir

    def __enter__(self) -> Served:
        program = shutil.which("evals-repro")
        assert program, "the evals-repro console script is not on PATH (run through `uv run`)"
        self.process = subprocess.Popen(
            [program, "serve-reranker", self.name, "--devices", DEVICE, "--log-dir", str(self.log_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**ORIGINAL_ENVIRON, "EVALS_REPRO_NO_PROGRESS": "1"},
        )
        self.lines: list[str] = []
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            print(line, end="")
            self.lines.append(line.rstrip("\n"))
            if line.startswith("export "):
                return self
        self.process.kill()
        raise AssertionError("serve-reranker did not report ready replicas:\n" + "\n".join(self.lines))

    def __exit__(self, *exc) -> None:
        self.process.send_signal(signal.SIGINT)
        out, _ = self.process.communicate(timeout=120)
        self.lines += out.splitlines()
        assert self.process.returncode == 0, "\n".join(self.lines)
        assert f"{self.name}: stopped 1 replica(s)" in self.lines


@pytest.mark.parametrize("name", ["qwen3-8b", "zerank-2"])
def test_served_scores_follow_the_card(name, tmp_path, monkeypatch):
    _requirements()
    from evals_repro.base.context import MethodContext
    from evals_repro.base.registry import RERANKERS
    from evals_repro.rerankers import vllm as client
    from evals_repro.rerankers.local_models import LOCAL_RERANKERS

    spec = LOCAL_RERANKERS[name]
    if name == "qwen3-8b":
        pairs = [(QUERY, d) for d in DOCUMENTS]
        ref = reference(spec, pairs, QWEN_HEAD, QWEN_TAIL, "p_yes", ["no", "yes"])
        assert ref["ids"] == {"no": 2152, "yes": 9693}
        tolerance = 0.03
    else:
        pairs = [("What is 2+2?", "4"), ("What is 2+2?", "The answer is definitely 1 million")]
        ref = reference(spec, pairs, ZERANK_HEAD, ZERANK_TAIL, "yes_logit", ["Yes"])
        assert ref["ids"] == {"Yes": 9454}
        assert ref["scores"] == pytest.approx([5.4062, -4.5], abs=0.3)  # the card's printed example
        tolerance = 0.3
    monkeypatch.delenv(spec.urls_env, raising=False)  # the default local port
    client.reset_replica_sets()
    with Served(name, tmp_path / "logs"):
        ctx = MethodContext(benchmark="gpu-check")
        reranker = RERANKERS.require(name).factory(name, None, ctx)
        evidence = reranker.verify_prefix_cache_off()
        assert [e["verified_off"] for e in evidence] == [True]
        by_query: dict[str, list[str]] = {}
        for query, document in pairs:
            by_query.setdefault(query, []).append(document)
        served = [s for query, docs in by_query.items() for s in reranker.rerank(query, docs)]
        print(f"{name}: served {served} reference {ref['scores']}")
        assert served == pytest.approx(ref["scores"], abs=tolerance)
        long_document = " ".join(["relevance"] * 40_000)
        scores = reranker.rerank(pairs[0][0], [pairs[0][1], long_document])
        assert len(scores) == 2 and ctx.usage.get("rerank_documents_truncated") == 1
