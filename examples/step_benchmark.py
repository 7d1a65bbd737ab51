"""Training-step benchmark: ms per `model.fit` step of three models on each backend.

A thin command line over `nalu_research.experiments.step_benchmark`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("step_benchmark"))
