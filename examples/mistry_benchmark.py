"""Mistry, Farrahi & Hare's benchmark: every unit, two inputs, nine ranges.

A thin command line over `nalu_research.experiments.mistry_benchmark`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("mistry_benchmark"))
