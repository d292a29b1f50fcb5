"""Tooling shared by the tests and the benchmarks (never imported by the server)."""
