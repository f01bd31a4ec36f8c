"""The pinned prompt files (`prompts/*.txt`), their digests, and how a prompt becomes a request.

A file holds a `[system]` section and a `[user]` section. Placeholders are replaced literally (no
format-string parsing, so a prompt may show JSON braces): `{question}`, `{reference}`, `{candidate}`,
`{n_images}`, `{box_scale}`, and `{context}`, which marks where the context pages go as parts.
The sha256 of each file's bytes is recorded in every result computed with it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources

from ..base.errors import DataError
from .render import Part

NAMES = ("answer", "answer_no_context", "judge", "grounding", "grounding_yx", "grounding_pixels")


@dataclass(frozen=True)
class Prompt:
    name: str
    system: str
    user: str
    digest: str  # sha256 of the file

    def render(self, values: dict[str, str], context: list[Part] | None = None) -> tuple[str, list[Part]]:
        """(system instruction, user parts) with placeholders filled and context parts spliced in."""
        system = _fill(self.system, values)
        before, marker, after = self.user.partition("{context}")
        parts = [Part(text=_fill(before, values))]
        if marker:
            parts.extend(context or [])
            parts.append(Part(text=_fill(after, values)))
        return system, [p for p in parts if p.image is not None or (p.text or "").strip()]


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text.strip("\n")


def load_prompt(name: str) -> Prompt:
    data = resources.files(__package__).joinpath("prompts", f"{name}.txt").read_bytes()
    text = data.decode("utf-8")
    if not text.startswith("[system]\n") or "\n[user]\n" not in text:
        raise DataError(f"prompt file {name}.txt lacks its [system] and [user] sections", "restore it from git")
    system, _, user = text[len("[system]\n") :].partition("\n[user]\n")
    return Prompt(name, system, user, hashlib.sha256(data).hexdigest())


def digests(names: tuple[str, ...] | list[str]) -> dict[str, str]:
    return {name: load_prompt(name).digest for name in names}
