"""The local rerankers served on vLLM: one specification per model, read by the server command and the client.

Everything that changes a score lives here: the checkpoint and tokenizer at a full commit sha, the
prompt (chat format, default instruction), the scoring rule, BF16 weights and the 32,768-token
context. `serve.py` turns a spec into `vllm serve` command lines; `vllm.py` builds prompts from it
and checks that a replica serves exactly this model before sending it anything.

Scoring rule, and how vLLM 0.33 reproduces it (read from its source):
- qwen3-8b: the card's p(yes) = softmax(logit_no, logit_yes)[yes] = sigmoid(logit_yes - logit_no) at the
  last position. `is_original_qwen3_reranker` makes vLLM build a one-label head W_yes - W_no (float32) from
  the LM head (`from_2_way_softmax`, model_executor/models/adapters.py) and apply a sigmoid (one label,
  PoolerClassify): the served score is that probability.
- zerank-2: the card's raw logit of `Yes` (token 9454) at the last position. `method: no_post_processing`
  copies the `Yes` row of the LM head into a one-label head; with `use_activation: false` no sigmoid is
  applied, so the served score is the raw logit (the card's old 0-1 score was sigmoid(logit / 5)).

Revisions: the commit shas below are the ones public projects pin for these repositories
(Qwen/Qwen3-Reranker-8B@77d193c7 in several independent pinned configs, vLLM deployments among them;
zeroentropy/zerank-2@5eae30d5, also addressed as zeroentropy/zerank-2-reranker, in several, one of them a
vLLM 0.23 deployment with exactly this one-row `Yes` head). The Hub itself cannot be reached from here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from ..base.errors import UsageError, choices

CONTEXT_TOKENS = 32_768
DTYPE = "bfloat16"

QWEN_SYSTEM = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. "
    'Note that the answer can only be "yes" or "no".'
)
QWEN_DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


def qwen3_reranker_parts(query: str, instruction: str | None) -> tuple[str, str]:
    """Qwen3-Reranker: system judge prompt, `<Instruct>/<Query>/<Document>` body, empty think block."""
    head = (
        f"<|im_start|>system\n{QWEN_SYSTEM}<|im_end|>\n<|im_start|>user\n"
        f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: "
    )
    return head, "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


def zerank2_parts(query: str, instruction: str | None) -> tuple[str, str]:
    """zerank-2: the query is the system turn, the document the user turn, then the generation prompt.

    Whitespace is kept as given, as the pinned revision does: zerank-2@5eae30d5 is a sentence-transformers
    CrossEncoder (Transformer + LogitScore modules, no remote code) whose pairs become flat `query`/`document`
    messages holding the texts unchanged, rendered by the checkpoint's chat_template.jinja without trimming.
    The `.strip()` of query and document belongs to zerank's older custom code (`format_pointwise_datapoints`,
    the zerank-1 family and the pre-May-2026 remote code), not to this revision.
    An instruction takes ZeroEntropy's recommended form (as in vLLM's zerank2.jinja).
    """
    system = f"<query>{query}</query>\n<instruction>{instruction}</instruction>" if instruction else query
    return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n"


@dataclass(frozen=True)
class LocalRerankerSpec:
    name: str  # registry name: `+qwen3-8b@50`, `--models qwen3-8b`
    checkpoint: str  # Hugging Face repository
    revision: str  # full commit sha of the checkpoint (and of the tokenizer, which ships with it)
    base_port: int  # replica i listens on base_port + i
    urls_env: str  # comma-separated replica URLs
    score_tokens: dict[str, int]  # tokens the score head is built from -> their ids in the tokenizer
    hf_overrides: dict[str, object]  # what turns the causal LM into the pinned one-logit score head
    use_activation: bool  # True: sigmoid on the head's logit; False: the raw logit
    scoring: str  # the rule, in words, for result files
    default_instruction: str | None
    card: str  # where the prompt and the rule come from
    format: Callable[[str, str | None], tuple[str, str]]  # (query, instruction) -> (head, tail)
    context_tokens: int = CONTEXT_TOKENS
    dtype: str = DTYPE
    tokenizer: str = ""  # defaults to the checkpoint (same repository, same revision)

    @property
    def tokenizer_repo(self) -> str:
        return self.tokenizer or self.checkpoint

    @property
    def model_id(self) -> str:
        """Checkpoint at its revision: the id the server is started under and the study records."""
        return f"{self.checkpoint}@{self.revision}"

    def prompt_parts(self, query: str, instruction: str | None = None) -> tuple[str, str]:
        """(head, tail): the prompt is head + document + tail; only the document is ever truncated."""
        return self.format(query, instruction or self.default_instruction)

    def prompt(self, query: str, document: str, instruction: str | None = None) -> str:
        head, tail = self.prompt_parts(query, instruction)
        return head + document + tail

    def pooler_config(self) -> dict[str, object]:
        return {"seq_pooling_type": "LAST", "use_activation": self.use_activation}

    def describe(self) -> dict[str, object]:
        return {
            "model": self.checkpoint,
            "revision": self.revision,
            "tokenizer": self.tokenizer_repo,
            "tokenizer_revision": self.revision,
            "dtype": self.dtype,
            "context_tokens": self.context_tokens,
            "scoring": self.scoring,
            "score_head": {"hf_overrides": self.hf_overrides, "pooler": self.pooler_config()},
            "default_instruction": self.default_instruction,
            "prompt_source": self.card,
        }


QWEN3_8B = LocalRerankerSpec(
    name="qwen3-8b",
    checkpoint="Qwen/Qwen3-Reranker-8B",
    revision="77d193c791ed757ca307ee72715aa132723da912",
    base_port=8300,
    urls_env="QWEN_RERANK_URLS",
    score_tokens={"no": 2152, "yes": 9693},
    hf_overrides={
        "architectures": ["Qwen3ForSequenceClassification"],
        "classifier_from_token": ["no", "yes"],
        "is_original_qwen3_reranker": True,
    },
    use_activation=True,
    scoring="p(yes) = sigmoid(logit_yes - logit_no) at the last position (tokens 9693, 2152)",
    default_instruction=QWEN_DEFAULT_INSTRUCTION,
    card="Qwen/Qwen3-Reranker-8B model card (transformers usage: prefix, format_instruction, suffix)",
    format=qwen3_reranker_parts,
)

ZERANK_2 = LocalRerankerSpec(
    name="zerank-2",
    checkpoint="zeroentropy/zerank-2",
    revision="5eae30d5ee3c6b2df2ef6d723bde45172d761c4c",
    base_port=8400,
    urls_env="ZERANK_RERANK_URLS",
    score_tokens={"Yes": 9454},
    hf_overrides={
        "architectures": ["Qwen3ForSequenceClassification"],
        "classifier_from_token": ["Yes"],
        "method": "no_post_processing",
    },
    use_activation=False,
    scoring="raw logit of 'Yes' (token 9454) at the last position",
    default_instruction=None,
    card="zeroentropy/zerank-2 model card (query as system turn, document as user turn, generation prompt)",
    format=zerank2_parts,
)

LOCAL_RERANKERS: dict[str, LocalRerankerSpec] = {spec.name: spec for spec in (QWEN3_8B, ZERANK_2)}


def get_spec(name: str) -> LocalRerankerSpec:
    spec = LOCAL_RERANKERS.get(name)
    if spec is None:
        raise UsageError(f"unknown local reranker '{name}'", f"choose from {choices(sorted(LOCAL_RERANKERS))}")
    return spec


def hf_overrides_json(spec: LocalRerankerSpec) -> str:
    return json.dumps(spec.hf_overrides, separators=(",", ":"))


def pooler_config_json(spec: LocalRerankerSpec) -> str:
    return json.dumps(spec.pooler_config(), separators=(",", ":"))
