"""Running example scripts in subprocesses, for the resume tests."""

import signal
import subprocess
import time

import tensorflow as tf


def kill_when_written(command, path, env, timeout=120, containing=None):
    """Starts `command`, waits until the file `path` exists (its first
    checkpoint) and, with `containing`, holds that text (e.g. a
    `tf.train.CheckpointManager`'s `checkpoint` file naming the checkpoint
    it finished), then kills it with SIGKILL, as a crash or a preemption
    would."""
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )

    def written():
        try:
            return path.exists() and (
                containing is None or containing in path.read_text()
            )
        except FileNotFoundError:  # replaced while read
            return False

    try:
        deadline = time.monotonic() + timeout
        while not written() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert written(), f"no checkpoint was written at {path}"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()


def checkpoint_epoch(folder):
    """The epochs completed at the latest checkpoint `training.fit` saved in
    `folder`: its `epoch` variable, named as `tf.train.list_variables` shows."""
    return int(
        tf.train.load_checkpoint(str(folder)).get_tensor(
            "epoch/.ATTRIBUTES/VARIABLE_VALUE"
        )
    )


def tensorboard_scalars(folder):
    """`{run: {tag: [step, ...]}}` of the TensorBoard scalars written under
    `folder`, a run being the folder of its events files, relative to
    `folder` (as TensorBoard names it), the steps in the order written."""
    from tensorboard.backend.event_processing.event_accumulator import (
        EventAccumulator,
    )

    runs = {}
    for events in sorted(folder.rglob("events.out.tfevents.*")):
        reader = EventAccumulator(str(events))
        reader.Reload()
        scalars = runs.setdefault(str(events.parent.relative_to(folder)), {})
        for tag in reader.Tags()["tensors"]:
            scalars.setdefault(tag, []).extend(e.step for e in reader.Tensors(tag))
    return runs
