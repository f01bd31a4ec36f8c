"""Generators and judges: `gemini:<model>` through google-genai, `openai:<model>` through the openai
SDK from any OpenAI-compatible `/v1/chat/completions` server (OpenAI itself, or a vLLM replica).

Every call goes through `providers.retry.call_with_retries`: the provider's shared throttle, the
harness's retries (429, 5xx, timeouts, dropped connections; Retry-After honoured), one-line errors.
Keys: `GEMINI_API_KEY` (or `GOOGLE_API_KEY`); `OPENAI_API_KEY`, optional when `OPENAI_BASE_URL` points at
a server of your own. Base URLs: `GOOGLE_GEMINI_BASE_URL`, `OPENAI_BASE_URL` (with `/v1`).
An `openai:<model>` on a server of your own (`providers.clients.openai_self_hosted`, the embedder's rule) bills
nothing: its calls are counted as self-hosted (`Usage.self_hosted`), never priced nor held to `--max-cost`, and
plans, spend lines and results say `prices.SELF_HOSTED`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from ..base.errors import ProviderError, UsageError, choices
from ..base.usage import Usage
from ..providers.batching import estimate_tokens
from ..providers.clients import openai_key_required, openai_self_hosted
from ..providers.retry import call_with_retries
from ..providers.settings import KEY_ENV, provider_settings
from .render import Part

PROVIDERS = ("gemini", "openai")
IMAGE_TOKEN_ESTIMATE = 1_500  # throttle booking per page image, replaced by the provider's count
OUTPUT_TOKEN_ESTIMATE = 1_000


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    model: str

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"


def parse_model(text: str, option: str = "--generator") -> ModelSpec:
    provider, sep, model = text.strip().partition(":")
    if not sep or provider not in PROVIDERS or not model:
        raise UsageError(
            f"{option} '{text}' is not <provider>:<model>",
            f"choose a provider from {choices(PROVIDERS)}, e.g. gemini:gemini-3-pro-preview or openai:gpt-5.2",
        )
    return ModelSpec(provider, model)


@dataclass(frozen=True)
class GenerationSettings:
    temperature: float | None = None  # None = the provider's default
    max_output_tokens: int | None = None

    def describe(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_output_tokens": self.max_output_tokens}


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_in: int
    tokens_out: int  # billed output: the answer plus any reasoning tokens
    reasoning_tokens: int
    finish_reason: str | None


def require_keys(specs: list[ModelSpec], more: list[str] | tuple[str, ...] = ()) -> None:
    """Fail before any work when needed keys are missing, naming every one of them in one line (the
    variables, never a value); `more` adds other variables the command needs (its retrieval pipeline's)."""
    from ..providers.keys import require_keys as require_all

    needed = [KEY_ENV[spec.provider] for spec in specs if spec.provider == "gemini"]
    if any(spec.provider == "openai" for spec in specs) and openai_key_required(provider_settings("openai").base_url):
        needed.append(KEY_ENV["openai"])
    require_all([*needed, *more])


class ChatClient:
    """One generator or judge for one worker thread (its SDK client is not shared across threads)."""

    def __init__(self, spec: ModelSpec, options: dict[str, Any], generation: GenerationSettings) -> None:
        self.spec = spec
        self.settings = provider_settings(spec.provider, options)
        self.generation = generation
        self._client: Any = None
        self._keyless = False

    @property
    def self_hosted(self) -> bool:
        """An OpenAI-compatible server of your own (OPENAI_BASE_URL not OpenAI's): no price, no --max-cost."""
        return self.spec.provider == "openai" and openai_self_hosted(self.settings.base_url)

    def _estimate(self, system: str, parts: list[Part]) -> int:
        estimate = self.estimate_units(system, parts)
        return int(estimate["input_tokens"] + estimate["output_tokens"])

    def estimate_units(self, system: str, parts: list[Part]) -> dict[str, float]:
        """Estimated input tokens (text, and a fixed count per image) and output tokens (the cap, or a typical answer)."""
        text = system + "".join(p.text or "" for p in parts)
        images = sum(1 for p in parts if p.image is not None)
        output = self.generation.max_output_tokens or OUTPUT_TOKEN_ESTIMATE
        return {"input_tokens": estimate_tokens(text) + images * IMAGE_TOKEN_ESTIMATE, "output_tokens": output}

    def complete(self, system: str, parts: list[Part], usage: Usage) -> Completion:
        call = self._gemini if self.spec.provider == "gemini" else self._openai
        own = self.self_hosted
        completion = call_with_retries(
            self.settings,
            lambda: call(system, parts),
            usage=usage,
            tokens=self._estimate(system, parts),
            what=f"{self.spec.model} generation",
            reported_tokens=lambda c: c.tokens_in + c.tokens_out,
            model=None if own else self.spec.model,  # a server of your own: nothing billed, no --max-cost
            bill=lambda c: {"input_tokens": c.tokens_in, "output_tokens": c.tokens_out},
            estimate=self.estimate_units(system, parts),
        )
        if own:
            usage.self_hosted(self.spec.provider, self.spec.model)
        return completion

    # -- Gemini (google-genai generateContent) -------------------------------------------------
    def _gemini(self, system: str, parts: list[Part]) -> Completion:
        from google.genai import types

        from ..providers.clients import gemini_client

        if self._client is None:
            self._client = gemini_client(self.settings)  # kept: a dropped genai.Client closes its transport
        contents = [
            types.Content(
                role="user",
                parts=[
                    types.Part.from_bytes(data=p.image, mime_type=p.mime_type or "image/png")
                    if p.image is not None
                    else types.Part.from_text(text=p.text or "")
                    for p in parts
                ],
            )
        ]
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=self.generation.temperature,
            max_output_tokens=self.generation.max_output_tokens,
        )
        response = self._client.models.generate_content(model=self.spec.model, contents=contents, config=config)
        meta = response.usage_metadata
        if meta is None:
            raise ValueError("the response carries no usageMetadata")
        candidates = response.candidates or []
        finish = candidates[0].finish_reason if candidates else None
        texts = [
            part.text
            for part in ((candidates[0].content.parts or []) if candidates and candidates[0].content else [])
            if part.text and not part.thought
        ]
        reasoning = meta.thoughts_token_count or 0
        return Completion(
            text="".join(texts),
            tokens_in=meta.prompt_token_count or 0,
            tokens_out=(meta.candidates_token_count or 0) + reasoning,
            reasoning_tokens=reasoning,
            finish_reason=str(finish.value if hasattr(finish, "value") else finish) if finish else None,
        )

    # -- OpenAI-compatible chat completions (the official SDK, its retries off) ---------------------
    def _openai(self, system: str, parts: list[Part]) -> Completion:
        import openai

        from ..providers.clients import openai_client, openai_key

        if self._client is None:
            self._keyless = openai_key(self.settings.base_url) is None  # a server of your own, started without a key
            self._client = openai_client(self.settings)
        content: list[dict[str, Any]] = []
        for p in parts:
            if p.image is not None:
                url = f"data:{p.mime_type or 'image/png'};base64,{base64.b64encode(p.image).decode()}"
                content.append({"type": "image_url", "image_url": {"url": url}})
            else:
                content.append({"type": "text", "text": p.text or ""})
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": content}]
        given: dict[str, Any] = {}
        if self.generation.temperature is not None:
            given["temperature"] = self.generation.temperature
        if self.generation.max_output_tokens is not None:
            given["max_completion_tokens"] = self.generation.max_output_tokens
        if self._keyless:  # no Authorization header at all (the SDK would send its placeholder key)
            given["extra_headers"] = {"Authorization": openai.omit}
        response = self._client.chat.completions.create(model=self.spec.model, messages=messages, **given)
        # The SDK builds its models without validation: a field a server left out is missing, not an error.
        choices: Any = getattr(response, "choices", None)
        usage = getattr(response, "usage", None)
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
        first = choices[0] if choices else None
        message = getattr(first, "message", None)
        if message is None or not isinstance(prompt, int) or not isinstance(completion, int):
            missing = "choices[0].message" if message is None else "usage.prompt_tokens/completion_tokens"
            raise ProviderError(
                f"openai {self.spec.model}: the answer lacks {missing}",
                "the server is not OpenAI-compatible; check OPENAI_BASE_URL (with /v1)",
            )
        details = getattr(usage, "completion_tokens_details", None)
        return Completion(
            text=getattr(message, "content", None) or "",
            tokens_in=prompt,
            tokens_out=completion,
            reasoning_tokens=int(getattr(details, "reasoning_tokens", None) or 0),
            finish_reason=getattr(first, "finish_reason", None),
        )

    def close(self) -> None:
        if self.spec.provider == "openai" and self._client is not None:
            self._client.close()
