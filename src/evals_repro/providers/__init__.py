"""Shared plumbing for every hosted API call: keys, SDK clients, throttles, retries, usage.

- `keys.require_key(env_var)`: a key from the environment or `.env`, never echoed;
- `settings.provider_settings(provider, options)`: limits, timeout, attempts, base URL;
- `clients.*_client(settings)`: official SDK clients with their own retries off;
- `throttle.get_throttle(settings)`: per-minute token/request/item budgets shared across threads;
- `retry.call_with_retries(settings, fn, usage=..., tokens=...)`: throttle, call, classify, retry, count;
- `batching.estimate_tokens`, `batching.plan_batches`: request sizing.

Layer: sources. May import base only; read by every layer above.
"""
