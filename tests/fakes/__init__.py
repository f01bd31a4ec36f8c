"""Fake provider servers (stdlib HTTP on 127.0.0.1, port 0) and a fake clock, for tests only.

One module per provider (`voyage`, `cohere`, `gemini`, `mixedbread`), each a `FakeServer` subclass from
`base`: add routes by subclassing and decorating handlers with `@route("POST", "/v1/rerank")`.
"""
