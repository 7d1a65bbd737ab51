"""The paper's recurrent arithmetic task (Section 4.1, Appendix B, Table 1 right).

A thin command line over `nalu_research.experiments.recurrent_arithmetic`,
where the experiment is written. `--help` lists its options.
"""

from nalu_research.experiments.recurrent_arithmetic import main

if __name__ == "__main__":
    raise SystemExit(main())
