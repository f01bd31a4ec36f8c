"""Embedders: API models through their official SDKs and offline NumPy models."""
