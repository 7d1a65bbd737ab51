"""The paper's static arithmetic task (Trask et al. 2018, Section 4.1, Appendix B).

A thin command line over `nalu_research.experiments.static_arithmetic`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("static_arithmetic"))
