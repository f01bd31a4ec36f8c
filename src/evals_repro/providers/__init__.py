"""Shared plumbing for every hosted API call: keys, SDK clients, throttles, retries, usage."""
