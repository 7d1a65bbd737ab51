"""Program evaluation with extrapolation (Trask et al. 2018, Section 4.4, Figure 4).

A thin command line over `nalu_research.experiments.program_evaluation`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("program_evaluation"))
