"""Mistry et al.'s own PyTorch code, run unmodified beside our Mistry benchmark.

A thin command line over `nalu_research.experiments.mistry_oracle`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("mistry_oracle"))
