"""Tracking time in a grid world with an actor-critic agent, with and without
a NAC (Trask et al. 2018, Section 4.5, Figure 5).

A thin command line over `nalu_research.experiments.grid_world`,
where the experiment is written. `--help` lists its options.
`--backend` picks the Keras backend; the default is the one measured fastest for it.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("grid_world"))
