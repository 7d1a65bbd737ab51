"""The research harness of keras_nalu: the experiments of Trask et al. (2018).

`nalu_research.tasks` generates each experiment's data and scores it;
`nalu_research.layers` holds the experiment-only layers and cells, registered
under the package name `nalu_research` so that every saved experiment model
reloads once this package is imported; `nalu_research.seed_batched` trains
many seeds in one compiled program; `nalu_research.experiments` holds the
command lines that `examples/` runs. The library, `keras_nalu`, never imports
this package.
"""

from nalu_research import layers

__all__ = ["layers"]
