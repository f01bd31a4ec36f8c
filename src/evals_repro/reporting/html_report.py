"""Self-contained HTML reports (`report -o report.html`, the study's `report.html`).

One file, readable in any browser without a network or JavaScript: the Markdown the command prints
(tables with their markers, legends, comparisons) converted to HTML, every figure inline as SVG (text
drawn as paths), then the protocol and provenance. A Content-Security-Policy allows nothing but the
page's own inline styles and images, so the page cannot make a request even if something in it tried.
"""

from __future__ import annotations

import datetime as dt
import functools
import html
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .explain import readable, reading_guide, scoring_rows
from .plots import Figure, svg_markup
from .report import BASELINE_MARK

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src 'none'; script-src 'none'"
STYLE = """
body { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.1em; margin-top: 1.3em; } h4 { font-size: 1em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; overflow-wrap: break-word; }
th { background: #eee; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.long { word-break: break-all; font-family: "DejaVu Sans Mono", monospace; font-size: 0.9em; }
.better { color: #0a7a2f; font-weight: bold; } .worse { color: #b3261e; font-weight: bold; }
tr.baseline td { background: #eaf1fb; } dl.reading dt { font-weight: bold; } dl.reading dd { margin: 0 0 0.4em 1.5em; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 0.85em; color: #555; } code { background: #f3f3f3; padding: 0 0.2em; }
.meta { color: #555; font-size: 0.9em; }
"""
MARKERS = {"▲": "better", "▼": "worse"}


@functools.cache
def _markdown() -> Any:
    """CommonMark with pipe tables, as the Markdown reads on GitHub; raw HTML is escaped (never passed through),
    and links and images stay text, so nothing in a method or subset name can make the page fetch anything."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table").disable(["link", "image", "autolink"])

    def text(self, tokens, idx, options, env) -> str:  # the better/worse markers get their colour
        out = html.escape(tokens[idx].content)
        for mark, css in MARKERS.items():
            out = out.replace(mark, f'<span class="{css}">{mark}</span>')
        return out

    def cell(self, tokens, idx, options, env) -> str:  # a right-aligned column is a number column
        token = tokens[idx]
        right = "text-align:right" in str(token.attrs.get("style", ""))
        token.attrs.pop("style", None)
        return f'<{token.tag} class="num">' if right and token.tag == "td" else f"<{token.tag}>"

    def row(self, tokens, idx, options, env) -> str:  # the baseline's row (`report --baseline`) is shaded
        first = tokens[idx + 2] if idx + 2 < len(tokens) else None
        baseline = first is not None and first.type == "inline" and first.content.endswith(BASELINE_MARK)
        return '<tr class="baseline">' if baseline else "<tr>"

    md.add_render_rule("text", text)
    md.add_render_rule("tr_open", row)
    md.add_render_rule("td_open", cell)
    md.add_render_rule("th_open", cell)
    return md


def _inline(text: str) -> str:
    """One line of Markdown (a caption) as inline HTML."""
    return _markdown().renderInline(text)


def markdown_to_html(text: str) -> str:
    """The Markdown this package writes (headings, pipe tables, paragraphs, lists, code) as HTML."""
    return _markdown().render(text)


def _scoped_svg(svg: str, prefix: str) -> str:
    """Prefix every id of one SVG (and its references), so several inline figures never share an id."""
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    if not ids:
        return svg
    pattern = re.compile(
        r'(\bid="|#)(' + "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True)) + r')(?=["\)])'
    )
    return pattern.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", svg)


def figures_html(figures: Sequence[Figure]) -> str:
    parts = []
    for n, item in enumerate(figures, start=1):
        svg = _scoped_svg(svg_markup(item.figure), f"f{n}")
        parts.append(
            f'<figure id="{html.escape(item.name)}" class="plot">\n{svg}\n'
            f"<figcaption>Figure {n}. {_inline(item.title)}</figcaption>\n</figure>"
        )
    return "\n".join(parts)


def key_value_table(rows: Iterable[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(readable(v))}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _grid_cell(value: Any) -> str:
    """A digest or a path (one long word) may break anywhere; words and dates stay whole."""
    text = str(value)
    long = len(text) > 32 and " " not in text
    return f'<td class="long">{html.escape(text)}</td>' if long else f"<td>{html.escape(text)}</td>"


def grid_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"
    body = "".join("<tr>" + "".join(_grid_cell(c) for c in row) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


def runtime_versions() -> dict[str, str]:
    """The packages that made this page (statistics and figures)."""
    from importlib import metadata

    found = {}
    for name in ("evals-repro", "numpy", "scipy", "matplotlib"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "(not installed)"
    return found


def page(
    title: str, body_markdown: str, figures: Sequence[Figure], sections: Sequence[tuple[str, str]], intro: str = ""
) -> str:
    """The whole document: `intro` (HTML), the Markdown body, the figures, then extra (heading, HTML) sections."""
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    first, _, rest = body_markdown.partition("\n")
    if first.strip() == f"# {title}":  # the page's own heading already says it
        body_markdown = rest
    versions = ", ".join(f"{k} {v}" for k, v in runtime_versions().items())
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">Generated {generated} with {html.escape(versions)}.</p>',
        '<section id="tables">',
        intro,
        markdown_to_html(body_markdown),
        "</section>",
    ]
    if figures:
        parts += ['<section id="plots">', "<h2>Plots</h2>", figures_html(figures), "</section>"]
    for heading, content in sections:
        anchor = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")
        parts += [f'<section id="{anchor}">', f"<h2>{html.escape(heading)}</h2>", content, "</section>"]
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _spend(usd: str, usage: dict[str, float]) -> str:
    """ "$0.0123 (voyage_requests 3, voyage_tokens 5120)": the cost, then the counts behind it."""
    counts = ", ".join(f"{k} {v:g}" for k, v in sorted(usage.items()) if v)
    return f"{usd} ({counts})" if counts else usd


def report_html(bundle, decimals: int = 1, extra: Sequence[tuple[str, str]] = ()) -> str:
    """`report -o report.html`: tables and comparisons, plots, protocol, provenance (with every plugin and Python
    object a method was built from: distribution, version, how installed, sources, describe()); `extra` sections
    (heading, HTML) follow them (`report --published`: the reproduction matrix of the benchmark's published figures)."""
    from .provenance import HEADER as COMPONENT_HEADER
    from .provenance import component_rows
    from .report import method_costs
    from .significance import DEFAULT_RESAMPLES

    results = bundle.results
    protocol_rows: list[tuple[str, Any]] = [
        ("benchmark", bundle.benchmark),
        ("measures", ", ".join(bundle.measures)),
        ("float-gain tie rule", bundle.tie_rule or "(any)"),
    ]
    protocol_rows += scoring_rows(results)
    if bundle.comparisons is not None:
        permutations = bundle.comparisons[0].permutations if bundle.comparisons else "-"
        protocol_rows += [
            (
                "paired comparisons",
                "randomization test (two-sided) and t-test, Holm-Bonferroni per table; intervals: the randomization "
                "test inverted at the level Holm tested each comparison at",
            ),
            ("permutations / bootstrap resamples / seed", f"{permutations} / {DEFAULT_RESAMPLES} / {bundle.seed}"),
        ]
    elif bundle.figures:
        protocol_rows.append(("plot intervals: bootstrap resamples / seed", f"{DEFAULT_RESAMPLES} / {bundle.seed}"))
    provenance = grid_table(
        ["method", "subset", "setting", "source", "revision", "data sha256", "queries", "created"],
        [
            (
                r.method,
                r.subset,
                r.setting.value,
                r.source.get("repo") or r.source.get("path") or r.source.get("kind") or "",
                r.source.get("revision") or "",
                r.data.combined,
                r.n_queries,
                r.created,
            )
            for r in sorted(results, key=lambda r: (r.method, r.subset))
        ],
    )
    versions: dict[str, set[str]] = {}
    for r in results:
        for name, version in r.versions.items():
            versions.setdefault(name, set()).add(version)
    spent: dict[str, dict[str, float]] = {}
    for r in results:
        usage = spent.setdefault(r.method, {})
        for key, value in r.usage.items():
            usage[key] = usage.get(key, 0.0) + value
    costs = method_costs(results)
    created = sorted(r.created for r in results)
    components = component_rows(results)
    sections = [
        ("Protocol", key_value_table(protocol_rows)),
        ("Provenance", provenance),
        *(
            [("Plugins and Python objects", grid_table(COMPONENT_HEADER, [row.cells() for row in components]))]
            if components
            else []
        ),
        (
            "Package versions recorded in the result files",
            grid_table(["package", "versions"], [(k, ", ".join(sorted(v))) for k, v in sorted(versions.items())]),
        ),
        (
            "Dates and spend",
            key_value_table(
                [
                    ("results created", f"{created[0]} to {created[-1]}" if created else "-"),
                    *((f"spent by {m}", _spend(costs[m], u)) for m, u in sorted(spent.items())),
                ]
            ),
        ),
    ]
    intro = reading_guide([t.title for t in bundle.tables if t.rows])
    return page(
        f"evals-repro report: {bundle.benchmark}",
        bundle.markdown(decimals),
        bundle.figures,
        [*sections, *extra],
        intro,
    )
