"""Mistry, Farrahi & Hare's own PyTorch code, run beside ours as an oracle.

A thin command line over `nalu_research.oracle`, where it is written:
their code, unmodified, from the mirrored repositories, on the cells,
ranges and seeds given; scored by their criterion into
`results/mistry_oracle.json`. `--help` lists its options.

    python examples/mistry_oracle.py --cells nau/add nmu/mul --ranges 6 --seeds 1 \\
        --iterations 2000
    python examples/mistry_oracle.py --compare results/mistry_benchmark.json
"""

from nalu_research.oracle import main

if __name__ == "__main__":
    raise SystemExit(main())
