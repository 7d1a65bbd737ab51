"""Number words to numbers (Trask et al. 2018, Section 4.3, Table 3, Figure 3).

A thin command line over `nalu_research.experiments.number_words`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("number_words"))
