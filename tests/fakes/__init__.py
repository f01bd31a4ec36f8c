"""Fake provider servers (stdlib HTTP on 127.0.0.1, port 0) and a fake clock, for tests only.

Embedding fakes, one module per provider (`voyage`, `cohere`, `gemini`, `mixedbread`), subclass
`base.FakeServer`: add routes by subclassing and decorating handlers with `@route("POST", "/v1/...")`;
`script()`/`fail()` queue errors, slow answers and malformed bodies. The rerank and store fakes
(`rerankers`, `mixedbread_store`) build on `_http.FakeServer`.
"""
