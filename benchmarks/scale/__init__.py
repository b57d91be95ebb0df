"""Scale benchmarks (issue 17): sparse input without densifying, streaming from files, and
data-parallel throughput. Each script has a ``--quick`` mode that CI runs."""
