"""kubegc benchmarks: run each as ``python -m bench.NAME`` from the repository root.

See docs/PERFORMANCE.md for what each one measures, the targets and the last figures.
"""
