"""Serving benchmark: exported SavedModels of the units against plain Keras ones.

A thin command line over `nalu_research.experiments.serving_benchmark`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend: tensorflow only here (it serves SavedModels).
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("serving_benchmark"))
