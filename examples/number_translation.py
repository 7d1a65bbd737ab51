"""Number words to numbers (Trask et al. 2018, Section 4.3, Table 3, Figure 3).

A thin command line over `nalu_research.experiments.number_translation`,
where the experiment is written. `--help` lists its options.
"""

from nalu_research.experiments.number_translation import main

if __name__ == "__main__":
    raise SystemExit(main())
