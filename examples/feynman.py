"""The Feynman equations (Udrescu & Tegmark, 2020): formulas from data, beside gplearn.

A thin command line over `nalu_research.experiments.feynman`, where the
experiment is written. `--help` lists its options; `--equation I.12.2` runs
one equation, `--csv PATH` your own data (columns the variables, the last
the target). `--backend` picks the Keras backend; the default is the one
measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("feynman"))
