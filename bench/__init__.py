"""Benchmark scripts, run as ``python -m bench.<name>``; pytest never collects them."""
