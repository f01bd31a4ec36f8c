"""trec_eval's files: reading runs and qrels (read.py), printing its output lines (write.py), and the
`evaluate` command's whole file-to-lines path (evaluate_files.py)."""
