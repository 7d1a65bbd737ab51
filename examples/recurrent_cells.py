"""Which recurrent cell for a running sum, a count or a running product.

A thin command line over `nalu_research.experiments.recurrent_cells`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("recurrent_cells"))
