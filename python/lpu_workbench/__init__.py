"""Helpers that the workbench's scripts and Python tests share (the `lpu-workbench` package,
pyproject.toml; docs/python.md):

- `lpu_workbench.checks`: soft checks for end-to-end tests (every check runs, all failures are
  reported at the end), behind the pytest fixture `check` of tests/conftest.py;
- `lpu_workbench.triton_data`: lpu's reference data (its LCG inputs, `--emit triton-data`
  loaders) and the repository's tolerances, for scripts/triton_check.py and the CPU tests.
"""
