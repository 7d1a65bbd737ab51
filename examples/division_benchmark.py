"""Division as Mistry, Farrahi & Hare (2021) test it: one unit, a/b among 10 inputs.

A thin command line over `nalu_research.experiments.division_benchmark`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("division_benchmark"))
