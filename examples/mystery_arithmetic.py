"""The "mystery arithmetic" task of the reference PyTorch walk-through.

A thin command line over `nalu_research.experiments.mystery_arithmetic`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("mystery_arithmetic"))
