"""Running the examples: in this process (the smoke runs), or in
subprocesses (the resume tests, which kill one)."""

import contextlib
import io
import os
import signal
import subprocess
import time
from pathlib import Path

from keras_nalu.checkpoints import FILENAME, Checkpoint


def blocking_imports(*packages):
    """Python source that makes `packages` unimportable in the process that
    runs it (first, before any import), for the tests of what the package
    needs. A probe that only looks for one (torch's dynamo asks
    `importlib.util.find_spec` for sklearn) finds a spec without an origin;
    loading it fails as a missing package does."""
    return f"""
import importlib.abc, importlib.machinery, sys
BLOCKED = {set(packages)!r}

class Refuse(importlib.abc.Loader):
    def create_module(self, spec):
        raise ImportError(f"No module named {{spec.name!r}} (blocked for this test)")

    def exec_module(self, module):
        pass

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            return importlib.machinery.ModuleSpec(name, Refuse())

sys.meta_path.insert(0, Block())
"""


def kill_when_written(command, folder, env, timeout=120, when=None):
    """Starts `command`, waits until the checkpoint folder `folder` holds a
    checkpoint (its first) and, with `when`, until `when(state)` is true of
    its JSON state (e.g. a step reached), then kills it with SIGKILL, as a
    crash or a preemption would."""
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )

    def written():
        if not (folder / FILENAME).exists():
            return False
        return when is None or when(checkpoint_state(folder))

    try:
        deadline = time.monotonic() + timeout
        while not written() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert written(), f"no checkpoint was written in {folder}"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()


def checkpoint_state(folder):
    """The JSON state of the checkpoint in `folder`."""
    return Checkpoint(folder).load()[2]


def checkpoint_epoch(folder):
    """The epochs completed at the checkpoint `training.fit` saved in
    `folder`."""
    return checkpoint_state(folder)["epoch"]


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


def run_in_process(experiment, *args, cwd=None):
    """Runs `examples/<experiment>.py ARGS` in this process, as
    `nalu_research.backends.run(experiment, ARGS)`, what the script calls (a
    subprocess would spend several seconds of the suite's CPU importing
    TensorFlow again). The backend is this process's: `make test` sets
    `KERAS_BACKEND`, which the scripts read before their defaults too.

    Returns a `subprocess.CompletedProcess` with the exit status (argparse's
    exit of 2 included), stdout and stderr, from `cwd` (default: here).
    """
    from nalu_research.backends import run

    stdout, stderr = io.StringIO(), io.StringIO()
    before = dict(os.environ)
    status = 0
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(stdout))
        stack.enter_context(contextlib.redirect_stderr(stderr))
        try:
            status = run(experiment, [str(a) for a in args]) or 0
        except SystemExit as exit_:
            code = exit_.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
            if not isinstance(code, (int, type(None))):
                print(code, file=stderr)
        finally:
            os.environ.clear()
            os.environ.update(before)
    return subprocess.CompletedProcess(
        [experiment, *map(str, args)], status, stdout.getvalue(), stderr.getvalue()
    )


def run_command_in_process(command, cwd=None):
    """`run_in_process` of `command`, the argument list of a subprocess that
    runs an example: `[python, "examples/NAME.py", *args]`."""
    _, script, *args = command
    return run_in_process(Path(script).stem, *args, cwd=cwd)


def example_env(**changes):
    """The environment of an example run in a subprocess beside runs in this
    process: on this process's backend, TensorFlow's logs quieter."""
    import keras

    return {
        **os.environ,
        "KERAS_BACKEND": keras.backend.backend(),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        **changes,
    }
