"""trec_eval's measures: the table (table.py), the `-m` spellings and our names for them (names.py,
ours.py), and the modules computing what pytrec_eval does not (or what trec_eval 10 changed)."""
