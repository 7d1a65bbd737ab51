"""Moved: being deleted once every experiment stands on the skeleton.

The shared arguments are in `nalu_research.arguments`, the training runs'
mechanics in `nalu_research.runs`, the batches in `nalu_research.tasks.batches`
and export-and-serve in `nalu_research.serving`; `nalu_research.experiment`
is the skeleton that uses them.
"""

from nalu_research.arguments import (  # noqa: F401
    RUN_OPTIONS,
    _LearningRateDrop,
    _Schedule,
    adam_options,
    add_backend_argument,
    add_training_arguments,
    argument_type,
    learning_rate,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from nalu_research.arguments import momentum as _momentum  # noqa: F401
from nalu_research.runs import (  # noqa: F401
    Checkpoints,
    create_strategy,
    epoch_steps,
    exits_on_longer_checkpoint,
    gather_json,
    is_chief,
    mean_over_steps,
    quiet_tensorflow_logger,
    report,
    resumed_total,
    steps_per_execution,
    stream_epochs,
    worker_index,
)
from nalu_research.serving import can_export  # noqa: F401
from nalu_research.tasks.batches import (  # noqa: F401
    OneBatch,
    Shuffled,
    array_batches,
    one_batch,
    shuffled_epochs,
)


def add_schedule_argument(parser, default=None, help=None):
    """Adds `--regularization STRENGTH START END` (`nalu_research.arguments`)."""
    parser.add_argument(
        "--regularization",
        nargs=3,
        action=_Schedule,
        default=default,
        metavar=("STRENGTH", "START", "END"),
        help=help,
    )


def add_learning_rate_drop_argument(parser):
    """Adds `--learning-rate-drop STEP FACTOR` (`nalu_research.arguments`)."""
    from nalu_research.arguments import SHARED

    parser.add_argument("--learning-rate-drop", **SHARED["learning_rate_drop"])


def add_ema_argument(parser):
    """Adds `--ema MOMENTUM` (`nalu_research.arguments`)."""
    from nalu_research.arguments import SHARED

    parser.add_argument("--ema", **SHARED["ema"])
