"""`make gpu-check`: the package on a GPU, beside the same machine's CPU.

A thin command line over `nalu_research.experiments.gpu_check`,
where the check is written. `--help` lists its options; `--dry-run` runs it
on this machine's CPU at tiny sizes.
"""

from nalu_research.backends import run

if __name__ == "__main__":
    raise SystemExit(run("gpu_check"))
