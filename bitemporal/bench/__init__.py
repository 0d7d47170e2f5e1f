"""Benchmarks shipped with the package, so that `bitemporal bench ...` runs from an install."""
