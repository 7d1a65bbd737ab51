"""The demo: what neural arithmetic units are for, in about a minute.

A thin command line over `nalu_research.experiments.demo`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("demo"))
