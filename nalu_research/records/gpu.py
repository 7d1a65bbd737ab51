"""docs/gpu.md, generated whole from `gpu/gpu.json` by the report of
`make gpu-check` (`nalu_research.experiments.gpu_check.page.report`)."""

from nalu_research.records import record

RECORD = "gpu/gpu.json"


def page():
    """The text of docs/gpu.md."""
    from nalu_research.experiments.gpu_check.page import report

    return report(record(RECORD))
