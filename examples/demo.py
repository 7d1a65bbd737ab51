"""The demo: what neural arithmetic units are for, in about a minute.

A thin command line over `nalu_research.experiments.demo`,
where the experiment is written. `--help` lists its options.
"""

from nalu_research.experiments.demo import main

if __name__ == "__main__":
    raise SystemExit(main())
