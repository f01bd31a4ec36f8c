"""Reports from result records: tables, paired comparisons with significance, breakdowns, plots, HTML.

Owns the tables (`report`), paired tests and intervals (`significance`, `comparisons`), breakdowns by query
metadata (`breakdown`), figures (`plots`, `report_plots`), the HTML page (`html_report`) and the bundle of
every output of one `report` call (`bundle`).

Layer: products. May import every layer up to the runner; it reads records, it never runs a method.
"""
