"""Reporting a finished run to the systems that watch nodes: a Prometheus textfile
(`--metrics-file`, `metrics.py`) and Kubernetes Events on the Node (`--events`, `events.py`).

`run.py` is the one hook: it wraps the command-line entry point, learns the command, its
settings and what it produced, and reports once the exit code is known.
"""
