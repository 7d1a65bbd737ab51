"""Which units for a formula that mixes operations: a*b - c, (a+b)*c, a/b + c.

A thin command line over `nalu_research.experiments.mixed_formulas`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("mixed_formulas"))
