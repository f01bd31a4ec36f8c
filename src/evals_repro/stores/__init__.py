"""Mixedbread Stores: resumable upload of benchmark pages, and store search as a retrieval method."""
