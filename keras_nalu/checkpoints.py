"""A run's checkpoint that a kill cannot tear, on every Keras backend.

One mechanism for every loop that resumes: `keras_nalu.training.fit` and the
research harness's seed-batched engine both save through `Checkpoint`. A
checkpoint is one file, `checkpoint.npz` in its folder: numbered arrays (the
values of the variables, in the order the caller lists them), named arrays
(e.g. callbacks' states) and a JSON state (epoch, history, the run's
configuration, ...). It is written under a temporary name in the same folder,
flushed to disk, then renamed over the previous one (`os.replace`, atomic on
POSIX and Windows), so a kill at any instant leaves the previous checkpoint or
the new one, never a mixture.

Only NumPy is needed: JAX and torch users train and resume without
TensorFlow installed. (Versions up to 0.2 wrote TensorFlow's format, a
`checkpoint` file and `ckpt-N.*`; `Checkpoint.load` refuses such a folder with
an error saying so, rather than starting afresh over it.)

>>> import tempfile, numpy as np
>>> folder = tempfile.mkdtemp()
>>> saved = Checkpoint(folder)
>>> saved.save([np.arange(3.0)], {"epoch": 2}, named={"best": np.array(0.5)})
>>> values, named, state = saved.load()
>>> values[0].tolist(), float(named["best"]), state
([0.0, 1.0, 2.0], 0.5, {'epoch': 2})
>>> saved.remove()
>>> saved.load() is None
True

A run that resumes loads its checkpoint with `load_for(config)`, which
applies the one resume policy (see `Checkpoint.load_for`) of every loop:
a checkpoint of another configuration is replaced, with a warning, unless
it was kept, then it is refused.
"""

import json
import logging
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from keras_nalu import validation

logger = logging.getLogger(__name__)

FILENAME = "checkpoint.npz"
# Beside a checkpoint that its run's caller kept when the run finished
# (`Checkpoint.keep`): what other work in the folder must not replace.
KEPT = "kept"
# A save's temporary file, left behind only by a kill while writing.
_PARTIAL = re.compile(r"\.checkpoint-[A-Za-z0-9_]+\.partial")
# The files of TensorFlow's `tf.train.CheckpointManager` (its default name
# "ckpt"), which versions up to 0.2 wrote: recognized to refuse resuming from
# them and to remove them.
_TF_FILES = re.compile(
    r"ckpt-\d+\.index|ckpt-\d+\.data-\d{5}-of-\d{5}|checkpoint(\.tmp[0-9a-f]{32})?"
)
_TF_PARTS = re.compile(r"ckpt-\d+_temp")
_TF_PART = re.compile(r"part-\d{5}-of-\d{5}(\.index|\.data-\d{5}-of-\d{5})")
_STATE = "state"
_VALUE = "value/{}"
_NAMED = "named/"


class Checkpoint:
    """The one checkpoint of a run, kept in `directory`.

    Args:
        directory: The run's own folder (created by the first `save`). Other
            files in it are never touched.
        argument: The name of the caller's argument that gave `directory`,
            for error messages.
    """

    def __init__(
        self, directory: str | os.PathLike, argument: str = "checkpoint_dir"
    ) -> None:
        if not isinstance(directory, (str, os.PathLike)):
            raise ValueError(
                f"Received an invalid value for `{argument}`, expected a folder "
                f"name (a str or os.PathLike). Received: {argument}={directory!r}"
            )
        self.argument = argument
        self.directory = Path(directory)
        self.path = self.directory / FILENAME

    def check_writable(self) -> None:
        """Raises a `ValueError` naming the folder unless a checkpoint can be
        written there (creating the folder if needed, and removing what the
        check wrote): call it before any work that a failed save would lose."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                dir=self.directory, prefix=".checkpoint-", suffix=".partial"
            ):
                pass
        except OSError as error:
            raise ValueError(
                f"Received an invalid value for `{self.argument}`, expected a "
                f"folder where a checkpoint can be written ({error}). "
                f"Received: {self.argument}={str(self.directory)!r}"
            ) from None

    def save(
        self,
        values: Sequence[np.ndarray],
        state: Any,
        named: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """Replaces the checkpoint, atomically.

        Args:
            values: Arrays (e.g. the values of a model's variables), restored
                in this order by `load`.
            state: A JSON-serializable value.
            named: `{name: array}`, further arrays restored by name.
        """
        arrays = {_VALUE.format(i): _raw(v) for i, v in enumerate(values)}
        arrays.update({_NAMED + k: np.asarray(v) for k, v in (named or {}).items()})
        text = json.dumps({"dtypes": [str(np.asarray(v).dtype) for v in values],
                           "state": state})  # fmt: skip
        arrays[_STATE] = np.frombuffer(text.encode(), np.uint8)
        self.directory.mkdir(parents=True, exist_ok=True)
        descriptor, partial = tempfile.mkstemp(
            dir=self.directory, prefix=".checkpoint-", suffix=".partial"
        )
        try:
            with os.fdopen(descriptor, "wb") as file:
                np.savez(file, **arrays)
                file.flush()
                os.fsync(file.fileno())
            os.replace(partial, self.path)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
        _sync_folder(self.directory)
        self._remove_partials()

    def load(self) -> tuple[list[np.ndarray], dict[str, np.ndarray], Any] | None:
        """The checkpoint as `(values, named, state)`, or `None` if there is
        none.

        Raises:
            ValueError: The folder holds a checkpoint of TensorFlow's format
                (keras_nalu up to 0.2), or the file is not a checkpoint.
        """
        if not self.path.exists():
            if any(_TF_FILES.fullmatch(p.name) for p in _files(self.directory)):
                raise ValueError(
                    f"The folder {str(self.directory)!r} holds a checkpoint in "
                    "TensorFlow's format, written by keras_nalu 0.2 or earlier, "
                    "which this version does not read. Finish that run with the "
                    "version that started it, or delete the checkpoint "
                    "(keras_nalu.training.remove_checkpoint) or use another "
                    "checkpoint_dir to start afresh."
                )
            return None
        try:
            with np.load(self.path, allow_pickle=False) as file:
                text = bytes(file[_STATE]).decode()
                record = json.loads(text)
                values = [
                    _from_raw(file[_VALUE.format(i)], dtype)
                    for i, dtype in enumerate(record["dtypes"])
                ]
                named = {
                    k[len(_NAMED) :]: file[k]
                    for k in file.files
                    if k.startswith(_NAMED)
                }
        except (OSError, ValueError, KeyError) as error:
            raise ValueError(
                f"The file {str(self.path)!r} is not a keras_nalu checkpoint "
                f"({error}). Delete it or use another checkpoint_dir."
            ) from None
        return values, named, record["state"]

    def load_for(
        self, config: str
    ) -> tuple[list[np.ndarray], dict[str, np.ndarray], Any] | None:
        """The checkpoint of the run `config` describes, as `load` returns
        it, or `None` to start afresh: the resume policy of every loop that
        resumes (`keras_nalu.training.fit`, the research harness's
        seed-batched engine), written once.

        The checkpoint's JSON state must hold the configuration it was
        saved with, as `state["config"]`. When that differs from `config`,
        the checkpoint is not resumed: a kept one (`keep`) is refused, any
        other is left to be replaced, with a warning logged (through
        `logging`, the logger `keras_nalu.checkpoints`) naming the file.

        Args:
            config: The run's configuration, as saved in `state["config"]`
                (e.g. `json.dumps(config, sort_keys=True)`).

        Returns:
            `(values, named, state)`, or `None` when there is no checkpoint
            or it is of another configuration and not kept.

        Raises:
            ValueError: The checkpoint is a kept one of another
                configuration (an `InvalidValueError` naming the caller's
                argument, `argument`), or `load` refuses the folder.

        Example:

        >>> import tempfile, numpy as np
        >>> saved = Checkpoint(tempfile.mkdtemp())
        >>> saved.save([np.zeros(2)], {"config": "lr=0.1", "epoch": 3})
        >>> saved.load_for("lr=0.1")[2]["epoch"]
        3
        >>> saved.load_for("lr=0.2") is None  # logs a warning: starts afresh
        True
        >>> saved.keep()
        >>> try:
        ...     saved.load_for("lr=0.2")
        ... except ValueError as error:
        ...     print(error.name)
        checkpoint_dir
        >>> saved.remove()
        """
        saved = self.load()
        if saved is None:
            return None
        state = saved[2]
        saved_config = state.get("config") if isinstance(state, dict) else None
        if saved_config == config:
            return saved
        if self.kept:
            raise validation.invalid(
                self.argument,
                "a folder without a kept checkpoint of another configuration "
                "(keep_checkpoint marked the one there: remove_checkpoint "
                "deletes it)",
                str(self.directory),
            )
        logger.warning(
            "The checkpoint %s is from another configuration: starting afresh "
            "(it will be replaced).",
            self.path,
        )
        return None

    def keep(self) -> None:
        """Marks the checkpoint kept: its run finished and its caller keeps
        it (to restore or continue it later), so that `kept` says not to
        replace it. `remove` deletes the mark with the checkpoint."""
        if self.path.exists():
            (self.directory / KEPT).touch()

    @property
    def kept(self) -> bool:
        """Whether `keep` marked the checkpoint in the folder."""
        return (self.directory / KEPT).is_file() and self.path.exists()

    def remove(self) -> None:
        """Deletes the checkpoint (and its `keep` mark, TensorFlow's checkpoint
        files of earlier versions, and what a kill while saving left), then
        the folder if it is empty. Other files are never touched."""
        if not self.directory.is_dir():
            return
        for path in self.directory.iterdir():
            name = path.name
            if path.is_file() and (
                name in (FILENAME, KEPT)
                or _PARTIAL.fullmatch(name)
                or _TF_FILES.fullmatch(name)
            ):
                path.unlink()
            elif path.is_dir() and _TF_PARTS.fullmatch(name):
                for part in path.iterdir():
                    if part.is_file() and _TF_PART.fullmatch(part.name):
                        part.unlink()
                if not any(path.iterdir()):
                    path.rmdir()
        if not any(self.directory.iterdir()):
            self.directory.rmdir()

    def _remove_partials(self):
        for path in _files(self.directory):
            if _PARTIAL.fullmatch(path.name):
                path.unlink(missing_ok=True)


def _files(folder):
    return [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []


def _raw(value):
    """`value`'s bytes: NumPy's own format cannot hold every dtype Keras
    variables have (bfloat16, from ml_dtypes, loads only with pickle)."""
    value = np.asarray(value)  # (np.ascontiguousarray makes a scalar 1-D)
    raw = np.frombuffer(value.tobytes(), np.uint8)
    return raw.reshape(*value.shape, value.dtype.itemsize)


def _from_raw(raw, dtype):
    if dtype == "bfloat16":
        import ml_dtypes  # a dependency of Keras 3

        dtype = ml_dtypes.bfloat16
    shape = raw.shape[:-1]
    return np.frombuffer(raw.tobytes(), np.dtype(dtype)).reshape(shape)


def _sync_folder(folder):
    """Flushes the folder's entry of the renamed file (POSIX; a no-op where
    folders cannot be opened)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
