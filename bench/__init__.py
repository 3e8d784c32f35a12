"""Benchmarks of the stateful path (issue 6): `make bench`, or `python -m bench --help`."""
