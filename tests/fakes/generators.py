"""Fake chat generators: Gemini `generateContent` (as google-genai 3.x sends it) and an OpenAI-compatible
`/v1/chat/completions` server (OpenAI, or a vLLM replica). Both hand each call to a `responder`
(a test function: `FakeCall -> str`) and report token usage from their own count, never the client's:

- Gemini: `POST /{v1,v1beta,v1alpha}/models/{model}:generateContent`, body `{"contents": [{"role",
  "parts": [{"text"} | {"inlineData": {"data", "mime_type"|"mimeType"}}]}], "systemInstruction",
  "generationConfig"}`; answers `{"candidates": [{"content": {"parts": [{"text"}], "role": "model"},
  "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount", "candidatesTokenCount",
  "thoughtsTokenCount", "totalTokenCount"}}`.
- OpenAI: `POST /v1/chat/completions`, `{"model", "messages": [{"role", "content": str | [{"type": "text",
  "text"} | {"type": "image_url", "image_url": {"url": "data:<mime>;base64,..."}}]}]}`; answers
  `{"choices": [{"message": {"role": "assistant", "content"}, "finish_reason"}], "usage": {"prompt_tokens",
  "completion_tokens", "total_tokens", "completion_tokens_details": {"reasoning_tokens"}}}`; errors
  `{"error": {"message", "type", "code"}}`. With `key` set, a wrong `Authorization: Bearer` gets 401.

`reported` lists, per answered call, the model and the token counts the fake reported.
"""

from __future__ import annotations

import base64
import binascii
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .base import FakeServer, Reply, Request, count_tokens, route
from .gemini import FakeGemini

IMAGE_TOKENS = 258  # what the fakes bill per image (Gemini's published per-image figure)
REASONING_TOKENS = 7  # every answer "thinks" this much, billed as output


@dataclass
class FakeCall:
    model: str
    system: str
    texts: list[str]
    images: list[bytes]
    started: float = field(default_factory=time.monotonic)

    @property
    def text(self) -> str:
        return "\n".join(self.texts)


Responder = Callable[[FakeCall], str]


def _decode(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return base64.urlsafe_b64decode(data)


class _Recording:
    responder: Responder
    delay: float

    def _answer(self, call: FakeCall) -> tuple[str, dict[str, int]]:
        if self.delay:
            time.sleep(self.delay)
        with self._log_lock:
            self.arrivals += 1
            held = self.hold_after is not None and self.arrivals > self.hold_after
        if held:  # a kill test stops the client while this call is unanswered, however slow the machine
            assert self.unhold.wait(120), "the held call was never released"
        text = self.responder(call)
        prompt = count_tokens(call.system + " " + call.text) + IMAGE_TOKENS * len(call.images)
        usage = {"prompt": prompt, "output": count_tokens(text) + REASONING_TOKENS, "reasoning": REASONING_TOKENS}
        with self._log_lock:
            self.reported.append({"model": call.model, **usage})
            self.calls.append(call)
        return text, usage

    def _init_log(self, responder: Responder, delay: float) -> None:
        self.responder, self.delay = responder, delay
        self.reported: list[dict] = []
        self.calls: list[FakeCall] = []
        self._log_lock = threading.Lock()
        self.arrivals = 0
        self.hold_after: int | None = None  # calls after this many are held until `unhold` is set
        self.unhold = threading.Event()


class FakeGeminiGenerate(FakeGemini, _Recording):
    def __init__(self, responder: Responder, delay: float = 0.0) -> None:
        super().__init__()
        self._init_log(responder, delay)

    @route("POST", r"/v1(?:beta|alpha)?/models/(?P<model>[^:/]+):generateContent")
    def generate(self, request: Request) -> Reply:
        body = request.json
        system = " ".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts", []))
        texts, images = [], []
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                inline = part.get("inlineData") or part.get("inline_data")
                if inline:
                    images.append(_decode(inline["data"]))
                elif "text" in part:
                    texts.append(part["text"])
        text, usage = self._answer(FakeCall(request.match["model"], system, texts, images))
        return Reply(
            200,
            {
                "candidates": [
                    {"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": {
                    "promptTokenCount": usage["prompt"],
                    "candidatesTokenCount": usage["output"] - usage["reasoning"],
                    "thoughtsTokenCount": usage["reasoning"],
                    "totalTokenCount": usage["prompt"] + usage["output"],
                },
                "modelVersion": request.match["model"],
            },
        )


class FakeOpenAIChat(FakeServer, _Recording):
    def __init__(self, responder: Responder, delay: float = 0.0, key: str | None = None) -> None:
        super().__init__()
        self._init_log(responder, delay)
        self.key = key

    def error_reply(self, status: int, message: str = "error", headers: dict | None = None) -> Reply:
        kind = "rate_limit_exceeded" if status == 429 else ("server_error" if status >= 500 else "invalid_request")
        return Reply(status, {"error": {"message": message, "type": kind, "code": status}}, headers or {})

    def before(self, request: Request) -> Reply | None:
        if self.key is not None and request.headers.get("authorization") != f"Bearer {self.key}":
            return self.error_reply(401, "Incorrect API key provided")
        return None

    @route("POST", r"/v1/chat/completions")
    def chat(self, request: Request) -> Reply:
        body = request.json
        system, texts, images = "", [], []
        for message in body.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                if message.get("role") == "system":
                    system += content
                else:
                    texts.append(content)
                continue
            for part in content or []:
                if part.get("type") == "text":
                    texts.append(part["text"])
                elif part.get("type") == "image_url":
                    url = part["image_url"]["url"]
                    images.append(_decode(url.split(",", 1)[1]))
        text, usage = self._answer(FakeCall(body["model"], system, texts, images))
        return Reply(
            200,
            {
                "id": f"chatcmpl-{len(self.reported)}",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": usage["prompt"],
                    "completion_tokens": usage["output"],
                    "total_tokens": usage["prompt"] + usage["output"],
                    "completion_tokens_details": {"reasoning_tokens": usage["reasoning"]},
                },
            },
        )
