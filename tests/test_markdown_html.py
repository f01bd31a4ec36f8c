"""The HTML report's Markdown, converted by markdown-it (CommonMark and pipe tables, as GitHub shows the Markdown
the command prints): number columns and markers keep their classes, and nothing a name carries becomes markup."""

from __future__ import annotations

from evals_repro.reporting.html_report import markdown_to_html

TABLE = """## Monolingual

| method | nDCG@10 | note |
|---|---:|---|
| bm25 | 51.2 ▲ | `k1=0.9` |
| dense \\| e5 | 48.0 ▼ | a \\| b |
"""


def test_a_table_keeps_its_number_columns_and_markers():
    out = markdown_to_html(TABLE)
    assert "<h2>Monolingual</h2>" in out
    assert "<th>method</th>\n<th>nDCG@10</th>\n<th>note</th>" in out  # headers plain, as before
    assert '<td class="num">51.2 <span class="better">▲</span></td>' in out
    assert '<td class="num">48.0 <span class="worse">▼</span></td>' in out
    assert "<td><code>k1=0.9</code></td>" in out
    # An escaped pipe stays inside its cell (GitHub's rule); a row keeps its three cells.
    assert "<td>dense | e5</td>" in out and "<td>a | b</td>" in out
    assert out.count("<td") == 6 and "style=" not in out


def test_lists_and_emphasis_read_as_markdown_does():
    out = markdown_to_html("Notes:\n\n- first\n- **second**\n\n1. one\n2. two\n")
    assert "<ul>\n<li>first</li>\n<li><strong>second</strong></li>\n</ul>" in out
    assert "<ol>\n<li>one</li>\n<li>two</li>\n</ol>" in out


def test_raw_html_links_and_images_stay_text():
    hostile = (
        '# <img src=x onerror="alert(1)">\n\n'
        "a <script>alert(1)</script> b & c\n\n"
        "[click](javascript:alert(1)) [site](https://example.com) ![p](https://example.com/p.png) "
        "<https://example.com/auto>\n\n"
        "| m<b>x</b> | 1 |\n|---|---:|\n| <iframe> | 2 |\n"
    )
    out = markdown_to_html(hostile)
    for tag in ("<img", "<script", "<a ", "<iframe", "<b>"):
        assert tag not in out, tag
    assert "href" not in out and "src=" not in out.replace("&lt;img src=x", "")
    assert "<h1>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</h1>" in out
    assert "<p>a &lt;script&gt;alert(1)&lt;/script&gt; b &amp; c</p>" in out
    assert "[site](https://example.com)" in out
    assert "<th>m&lt;b&gt;x&lt;/b&gt;</th>" in out and '<td class="num">2</td>' in out
