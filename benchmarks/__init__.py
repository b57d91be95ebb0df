"""Benchmark scripts, one per question; run each from the repository root as a module
(``python -m benchmarks.gp``) or by name (``python -m benchmarks run gp [--quick]``).

``python -m benchmarks`` lists them with the result files each writes under
``benchmarks/results`` (the table is :mod:`benchmarks.registry`). ``common/`` holds the data
loader, timing, the machine line and the report writer; ``baselines/`` the paper's competitors;
``paper/`` the paper's experiments; ``perf/`` and ``scale/`` speed, memory and defaults against
peers; ``research/`` the two probes still in use (the others are decision records under
``docs/decisions``).
"""
