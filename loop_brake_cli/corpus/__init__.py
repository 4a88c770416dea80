"""Corpora of runs: trajectory datasets with one run per row, and partial reports.

``rows`` reads a dataset (Parquet through the optional ``pyarrow``, one row group
at a time in small batches, or JSON lines) as located rows; ``runs`` turns one row
into the records of its run (the layouts of the public SWE-agent and OpenHands
trajectory datasets); ``partial`` writes a finished ``Report`` as a mergeable JSON
file and reads it back, so ``loop-brake merge`` (or any cluster) combines the
reports of separate pieces into the report of one run over all of them.
"""
