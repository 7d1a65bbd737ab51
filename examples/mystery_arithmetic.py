"""The "mystery arithmetic" task of the reference PyTorch walk-through.

A thin command line over `nalu_research.experiments.mystery_arithmetic`,
where the experiment is written. `--help` lists its options.
"""

from nalu_research.experiments.mystery_arithmetic import main

if __name__ == "__main__":
    raise SystemExit(main())
