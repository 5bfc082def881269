"""Benchmarks: figures printed side by side from one run, never asserted."""
