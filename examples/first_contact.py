"""First contact: every unit of the package, and Dense, as a new user meets them.

A thin command line over `nalu_research.experiments.first_contact`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("first_contact"))
