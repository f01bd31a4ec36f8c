"""Run a FakeOpenAICompatible in its own process (a replica that can really be killed): prints its URL, serves
until killed. `python -m fakes.openai_process MODEL --latency S --die-after N --answer-log PATH`."""

from __future__ import annotations

import argparse
import threading

from fakes.openai_compat import FakeOpenAICompatible


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--die-after", type=int, default=None)
    parser.add_argument("--answer-log", default=None)
    args = parser.parse_args()
    with FakeOpenAICompatible(args.model, latency=args.latency) as fake:
        fake.die_after, fake.answer_log = args.die_after, args.answer_log
        fake.answer_lock = threading.Lock()  # it dies between answers, never between one and its log line
        print(fake.url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
