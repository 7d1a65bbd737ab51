"""Identity extrapolation (Trask et al. 2018, Section 1.1, Figure 1, Table 5).

A thin command line over `nalu_research.experiments.identity`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("identity"))
