"""Identity extrapolation (Trask et al. 2018, Section 1.1, Figure 1, Table 5).

A thin command line over `nalu_research.experiments.identity_extrapolation`,
where the experiment is written. `--help` lists its options.
"""

from nalu_research.experiments.identity_extrapolation import main

if __name__ == "__main__":
    raise SystemExit(main())
