"""The LLM judge: compares a candidate answer with the gold `answer`, replies with a binary verdict.

The pinned prompt asks for one JSON object with a boolean `correct`; the last `"correct": true|false`
in the reply decides. A reply without one is recorded as unparsed and counts as incorrect (the count
is reported), so a judge's formatting slip never inflates accuracy.
"""

from __future__ import annotations

import re

from .prompts import Prompt

VERDICT = re.compile(r'"correct"\s*:\s*(true|false)', re.IGNORECASE)


def judge_request(prompt: Prompt, question: str, reference: str, candidate: str):
    values = {"question": question, "reference": reference, "candidate": candidate or "(no answer)"}
    return prompt.render(values)


def parse_verdict(text: str) -> bool | None:
    found = VERDICT.findall(text or "")
    return found[-1].lower() == "true" if found else None
