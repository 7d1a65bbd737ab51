"""Tables of docs/backends.md, from `step_benchmark.json`
(`examples/step_benchmark.py`)."""

from nalu_research.monitoring import markdown_table
from nalu_research.records import record

STEP_BENCHMARK = "backends/step_benchmark.json"
NAMES = {
    "demo": "demo NALU, batch 64",
    "number_words": "number words, 169 phrases, 3 seeds side by side",
    "program_evaluation": "program evaluation, batch 64",
    "engine_25": "seed-batched NALU-NALU, 25 runs, per run-iteration",
    "engine_150": "seed-batched NALU-NALU, 150 runs, per run-iteration",
}


def steps():
    """Milliseconds per training step on each backend (median over the
    rounds), and TensorFlow's over JAX's and torch's."""
    models = record(STEP_BENCHMARK)["models"]
    rows = [
        [
            NAMES[name],
            *(
                f"{result['ms_per_step'][b]:.3g}"
                for b in ("tensorflow", "jax", "torch")
            ),
            *(f"{result['ratios'][f'tensorflow/{b}']:.2f}" for b in ("jax", "torch")),
        ]
        for name, result in models.items()
    ]
    header = ["model", "tensorflow ms", "jax ms", "torch ms", "tf/jax", "tf/torch"]
    return "\n".join(markdown_table(header, rows))
