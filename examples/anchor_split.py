"""The anchor's stuck runs, controlled: does the NAU's initial split decide them?

A thin command line over `nalu_research.experiments.anchor_split`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is tensorflow, whose draws
the seeds it names are.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("anchor_split"))
