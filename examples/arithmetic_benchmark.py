"""Benchmark: the static arithmetic task over many seeds, measured two ways.

A thin command line over `nalu_research.experiments.arithmetic_benchmark`,
where the experiment is written. `--help` lists its options.
"""

from nalu_research.experiments.arithmetic_benchmark import main

if __name__ == "__main__":
    raise SystemExit(main())
