"""The rcp-ndcg paper's two summary views of `{domain}__{language}` results, as report tables.

- native-language view: each domain scored on its questions in the language they were written
  in (the declaration's `[native]` table: french for energy, finance_fr, physics);
- language-mean view: each domain's mean over its query-language subsets (six in the release),
  then the mean over domains.
A cell is filled only when every subset it averages is present, and the `mean` column only when
every domain is: partial means are not comparable with the published ones.
"""

from __future__ import annotations

from ..benchmarks.declaration import BenchmarkDeclaration
from ..report import Table, method_order, subset_score
from ..results import StoredResult


def _mean(values: list[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return sum(values) / len(values)  # type: ignore[arg-type]


def domain_views(results: list[StoredResult], decl: BenchmarkDeclaration, measure: str) -> list[Table]:
    """Native-language and language-mean tables (methods x domains, then `mean`); [] for other benchmarks."""
    native = decl.extra.get("native")
    if decl.loader != "rcp" or not isinstance(native, dict) or not native:
        return []
    domains = list(native)
    languages = list(decl.query_languages)
    native_rows, mean_rows = [], []
    for method in method_order(results):
        scores = {r.subset: subset_score(r, "monolingual", measure) for r in results if r.method == method}
        by_native = [scores.get(f"{d}__{native[d]}") for d in domains]
        by_mean = [_mean([scores.get(f"{d}__{lang}") for lang in languages]) for d in domains]
        if any(v is not None for v in by_native):
            native_rows.append((method, by_native + [_mean(by_native)]))
        if any(v is not None for v in by_mean):
            mean_rows.append((method, by_mean + [_mean(by_mean)]))
    columns = domains + ["mean"]
    return [
        Table(f"{decl.name} — native-language view — {measure} (x100)", columns, native_rows),
        Table(f"{decl.name} — {len(languages)}-language mean view — {measure} (x100)", columns, mean_rows),
    ]
