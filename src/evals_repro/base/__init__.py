"""Foundations every layer stands on: typed errors, atomic files, locks, progress, usage, the data model, names.

Owns the errors with their exit codes (`errors`), crash-safe writes and readers (`io`, `matrix_file`,
`call_journal`, `locks`), progress bars (`progress`), image formats by signature (`images`), what was spent
(`usage`), the data a method receives (`data`: `Subset`, `Query`, `Page`, `Run`; `context`: `MethodContext`), what
a user's component must hand back (`contracts`), one page rendering (`rendering`, `pagestore`), what identifies a
component from outside the package (`identity`) and the registries that resolve a name to its builder (`registry`).

Layer: base. Imports nothing of evals_repro outside this package; inside it, a module imports only those
listed before it in tests/test_import_layers.py's BASE_ORDER.
"""
