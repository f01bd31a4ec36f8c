"""evals-repro."""
