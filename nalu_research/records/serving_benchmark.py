"""Tables of docs/experiments/serving-benchmark.md, from
`serving_benchmark.json`."""

from nalu_research.monitoring import markdown_table
from nalu_research.records import record

RECORD = "experiments/serving-benchmark/serving_benchmark.json"
STATIC = {
    "dense": "Dense",
    "nalu": "NALU",
    "dense_xla": "Dense, XLA",
    "nalu_xla": "NALU, XLA",
}
RECURRENT = {"simple_rnn": "SimpleRNN", "nalu_cell": "NALUCell"}


def static():
    """Latency at batch 1 and throughput at batch 1,024 of the four static
    models."""
    data = record(RECORD)
    latency, rows = data["latency_ms"], data["rows_per_second"]
    table = [
        [
            name,
            f"{latency[m]['p50']:.3f} ms",
            f"{latency[m]['p99']:.3f} ms",
            f"{rows[m]:.2e}",
        ]
        for m, name in STATIC.items()
    ]
    header = ["model", "batch-1 p50", "batch-1 p99", "rows/s at batch 1,024"]
    return "\n".join(markdown_table(header, table))


def ratios():
    """The NALU's cost over the Dense's, as Keras exports them, both
    compiled by XLA, and the NALU compiled against the Dense as exported."""
    data = record(RECORD)
    latency, rows = data["latency_ms"], data["rows_per_second"]

    def row(name, nalu, dense, bold=False):
        cost = f"{rows[dense] / rows[nalu]:.2f}x"
        return [
            name,
            f"{latency[nalu]['p50'] / latency[dense]['p50']:.2f}x",
            f"{latency[nalu]['p99'] / latency[dense]['p99']:.2f}x",
            f"**{cost}**" if bold else cost,
        ]

    table = [
        row("both as Keras exports them", "nalu", "dense", bold=True),
        row("both compiled by XLA", "nalu_xla", "dense_xla"),
        row("NALU with XLA / Dense as Keras exports it", "nalu_xla", "dense"),
    ]
    header = [
        "NALU / Dense",
        "batch-1 p50",
        "batch-1 p99",
        "cost per row at batch 1,024",
    ]
    return "\n".join(markdown_table(header, table))


def per_step(marginal=""):
    """Microseconds per time step of the recurrent models at batch 32 per
    sequence length, or (`marginal`) between two lengths."""
    key = "marginal_us_per_step_batch_32" if marginal else "us_per_step_batch_32"
    values = record(RECORD)[key]
    columns = list(values["nalu_cell"])
    what = "marginal per step" if marginal else "per step"
    table = [
        [f"{name}, {what}", *(f"{values[m][c]:.1f}" for c in columns)]
        for m, name in RECURRENT.items()
    ]
    if marginal:
        header = [
            "between lengths",
            *("-".join(f"{int(n):,}" for n in c.split("-")) for c in columns),
        ]
    else:
        header = ["sequence length", *(f"{int(c):,}" for c in columns)]
    return "\n".join(markdown_table(header, table))
