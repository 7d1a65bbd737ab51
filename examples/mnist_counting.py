"""MNIST digit counting and addition (Trask et al. 2018, Section 4.2, Table 2).

A thin command line over `nalu_research.experiments.mnist_counting`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("mnist_counting"))
