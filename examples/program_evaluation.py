"""Program evaluation with extrapolation (Trask et al. 2018, Section 4.4, Figure 4).

A thin command line over `nalu_research.experiments.program_evaluation`,
where the experiment is written. `--help` lists its options.
"""

from nalu_research.experiments.program_evaluation import main

if __name__ == "__main__":
    raise SystemExit(main())
