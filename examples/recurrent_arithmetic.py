"""The paper's recurrent arithmetic task (Section 4.1, Appendix B, Table 1 right).

A thin command line over `nalu_research.experiments.recurrent_arithmetic`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("recurrent_arithmetic"))
