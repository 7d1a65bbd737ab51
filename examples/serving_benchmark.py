"""Serving benchmark: exported SavedModels of the units against plain Keras ones.

A thin command line over `nalu_research.experiments.serving_benchmark`,
where the experiment is written. `--help` lists its options.
"""

from nalu_research.experiments.serving_benchmark import main

if __name__ == "__main__":
    raise SystemExit(main())
