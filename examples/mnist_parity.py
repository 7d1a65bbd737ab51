"""MNIST parity and the NAC ablation (Trask et al. 2018, Section 4.6, Table 4).

A thin command line over `nalu_research.experiments.mnist_parity`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("mnist_parity"))
