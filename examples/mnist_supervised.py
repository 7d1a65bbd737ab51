"""The digit encoder trained on labels: the ceiling of Table 2's single digits.

A thin command line over `nalu_research.experiments.mnist_supervised`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("mnist_supervised"))
