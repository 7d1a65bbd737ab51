"""Benchmark: the static arithmetic task over many seeds, measured two ways.

A thin command line over `nalu_research.experiments.units_benchmark`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("units_benchmark"))
