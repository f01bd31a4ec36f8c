"""trec_eval's files: reading runs and qrels (read.py, a block of lines at a time: blocks.py the bytes, columns.py
and numbers.py the NumPy split and parse), printing its output lines (write.py), and the `evaluate` command's whole
file-to-lines path (evaluate_files.py)."""
