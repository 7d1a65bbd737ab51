"""A run's checkpoint that a kill cannot tear, on every Keras backend.

One mechanism for every loop that resumes: `keras_nalu.training.fit` and the
research harness's seed-batched engine both save through `Checkpoint`. A
checkpoint is one file, `checkpoint.npz` in its folder: numbered arrays (the
values of the variables, in the order the caller lists them), named arrays
(e.g. callbacks' states) and a JSON state (epoch, history, the run's
configuration, ...). It is written under a temporary name in the same folder
(one per process: `.checkpoint-<pid>-<random>.partial`), flushed to disk,
then renamed over the previous one (`os.replace`, atomic on POSIX and
Windows), so a kill at any instant leaves the previous checkpoint or the new
one, never a mixture. Its mode follows the umask, like the run's other files.

A run owns its folder: `Checkpoint.lock` (which `fit` and the engine call
before they read the folder, and `save` calls if they did not) takes an
advisory lock on the file `.checkpoint.lock` there, which the operating
system releases when the process ends, even by SIGKILL. A second run on the
same folder, in another process or through another `Checkpoint` in the same
one, fails at once with a `CheckpointInUseError` naming the folder and the
process that holds it, rather than replacing the first run's checkpoints.
`close` (or the end of a `with` block) releases it.

A file that is not a whole checkpoint (cut short, empty, damaged, an `.npy`
or any other file in its place) is refused with a `ValueError` naming it and
what is wrong with it, never replaced by a fresh start.

Only NumPy is needed: JAX and torch users train and resume without
TensorFlow installed. (Versions up to 0.2 wrote TensorFlow's format, a
`checkpoint` file and `ckpt-N.*`; `Checkpoint.load` refuses such a folder with
an error saying so, rather than starting afresh over it.)

>>> import tempfile, numpy as np
>>> folder = tempfile.mkdtemp()
>>> with Checkpoint(folder) as saved:  # the folder is this run's until the end
...     saved.save([np.arange(3.0)], {"epoch": 2}, named={"best": np.array(0.5)})
...     values, named, state = saved.load()
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

import contextlib
import errno
import json
import logging
import os
import re
import secrets
import socket
import struct
import weakref
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from keras_nalu import validation

try:
    import fcntl
except ImportError:  # Windows: no `flock`; folders are not locked there.
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

FILENAME = "checkpoint.npz"
# Beside a checkpoint that its run's caller kept when the run finished
# (`Checkpoint.keep`): what other work in the folder must not replace.
KEPT = "kept"
# The file a run locks to own its folder (`Checkpoint.lock`); it holds the
# process id and host of the run, for the message a second run gives.
LOCK = ".checkpoint.lock"
# A save's temporary file, left behind only by a kill while writing:
# `.checkpoint-<pid>-<random>.partial` (`.checkpoint-<random>.partial` before
# folders were locked).
_PARTIAL = re.compile(r"\.checkpoint-[A-Za-z0-9_-]+\.partial")
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
_ZIP = b"PK\x03\x04"  # how a zip archive (an .npz) starts
_NPY = b"\x93NUMPY"  # how a single NumPy array (an .npy) starts
# What reading a damaged zip archive or .npy in it raises.
_DAMAGE = (
    OSError,
    EOFError,
    ValueError,
    KeyError,
    TypeError,
    IndexError,
    OverflowError,
    MemoryError,
    struct.error,
    zlib.error,
    zipfile.BadZipFile,
    NotImplementedError,
    RuntimeError,  # e.g. zipfile's "File ... is encrypted"
)


class CheckpointInUseError(RuntimeError):
    """Another run holds the checkpoint folder (`Checkpoint.lock`).

    Attributes:
        directory: The folder.
        pid: The process id of the run that holds it, or None if unknown.
        host: The name of the host that process runs on, or None.
    """

    def __init__(
        self,
        directory: Path,
        pid: int | None,
        host: str | None,
        argument: str = "checkpoint_dir",
    ) -> None:
        if pid is None:
            holder = "another process holds it (its id is not written yet)"
        else:
            holder = f"process {pid}"
            if host is not None and host != socket.gethostname():
                holder += f" on {host}"
            elif pid == os.getpid():
                holder += " (this process: another Checkpoint of the folder is open)"
            holder += " holds it"
        super().__init__(
            f"The checkpoint folder {str(directory)!r} is in use by another "
            f"run: {holder}. Two runs in one folder would replace each other's "
            "checkpoints; wait for that run to end, or use another "
            f"{argument}."
        )
        self.directory, self.pid, self.host = directory, pid, host
        self.argument = argument

    def __reduce__(self) -> Any:  # its arguments, not its message
        return type(self), (self.directory, self.pid, self.host, self.argument)


class _Damaged(Exception):
    """What is wrong with a checkpoint file, for `Checkpoint.load`'s error."""


class Checkpoint:
    """The one checkpoint of a run, kept in `directory`.

    A run that saves owns the folder: call `lock` before reading it (or use
    the checkpoint in a `with` block, which locks it and releases it at the
    end), and `close` once done; `save` locks it if it is not. Reading
    (`load`, `load_for`) takes no lock: a reader sees the previous
    checkpoint or the new one, whole. `keep` and `remove` lock the folder
    while they change it.

    Args:
        directory: The run's own folder (created by `lock` or the first
            `save`). Other files in it are never touched.
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
        self._lock: _FolderLock | None = None
        self._release: weakref.finalize | None = None
        self._unlockable = fcntl is None  # Windows, or a filesystem without locks

    def __enter__(self) -> "Checkpoint":
        self.lock()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def lock(self) -> None:
        """Takes the folder for this run (creating it), or raises at once.

        The lock is an advisory one (`fcntl.flock`) on the file
        `.checkpoint.lock` in the folder, which holds this process's id: the
        operating system releases it when the process ends, however it
        ends. Does nothing if this checkpoint holds it already, or where
        there is no `fcntl` (Windows) or the filesystem has no locks (a
        warning is logged): there two runs must not share a folder.

        Raises:
            CheckpointInUseError: Another run holds the folder: another
                process, or another `Checkpoint` of it in this process (a
                `RuntimeError` naming the folder and the process).
            ValueError: The folder cannot be created or written, as
                `check_writable`.
        """
        self._take(create=True)

    def close(self) -> None:
        """Releases the folder (`lock`), deleting the lock file; the
        checkpoint itself stays. Does nothing if it is not held."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if self._release is not None:
            self._release.detach()
            self._release = None

    @property
    def locked(self) -> bool:
        """Whether this checkpoint holds its folder's lock."""
        return self._lock is not None and self._lock.held

    def check_writable(self) -> None:
        """Raises a `ValueError` naming the folder unless a checkpoint can be
        written there (creating the folder if needed, and removing what the
        check wrote): call it before any work that a failed save would lose."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            descriptor, partial = self._partial()
            os.close(descriptor)
            os.unlink(partial)
        except OSError as error:
            raise self._unwritable(error) from None

    def save(
        self,
        values: Sequence[np.ndarray],
        state: Any,
        named: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """Replaces the checkpoint, atomically, locking the folder first if
        this checkpoint does not hold it (see `lock`).

        Args:
            values: Arrays (e.g. the values of a model's variables), restored
                in this order by `load`.
            state: A JSON-serializable value.
            named: `{name: array}`, further arrays restored by name.
        """
        arrays = {_VALUE.format(i): _raw(v) for i, v in enumerate(values)}
        arrays.update({_NAMED + k: np.asarray(v) for k, v in (named or {}).items()})
        dtypes = [str(np.asarray(v).dtype) for v in values]
        text = json.dumps({"dtypes": dtypes, "state": state})
        arrays[_STATE] = np.frombuffer(text.encode(), np.uint8)
        self.lock()
        descriptor, partial = self._partial()
        try:
            with os.fdopen(descriptor, "wb") as file:
                np.savez(file, **arrays)
                file.flush()
                os.fsync(file.fileno())
            os.replace(partial, self.path)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        _sync_folder(self.directory)
        self._remove_partials()

    def load(self) -> tuple[list[np.ndarray], dict[str, np.ndarray], Any] | None:
        """The checkpoint as `(values, named, state)`, or `None` if there is
        none.

        Raises:
            ValueError: The folder holds a checkpoint of TensorFlow's format
                (keras_nalu up to 0.2), or the file is not a whole checkpoint:
                the message names it and what is wrong (empty, cut short,
                damaged, an `.npy` or another file, an `.npz` that
                keras_nalu did not write). The file is left as it is.
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
            return _read(self.path)
        except _Damaged as error:
            raise ValueError(
                f"The file {str(self.path)!r} is not a keras_nalu checkpoint: "
                f"{error}. It is left as it is: delete it (or move it away) to "
                f"start afresh, or use another {self.argument}."
            ) from None

    def load_for(
        self,
        config: str,
        layout: Sequence[tuple[Sequence[int], str]] | None = None,
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
            layout: The `(shape, dtype)` of each array `values` must hold
                (e.g. of the variables the run restores), or None not to
                check them.

        Returns:
            `(values, named, state)`, or `None` when there is no checkpoint
            or it is of another configuration and not kept.

        Raises:
            ValueError: The checkpoint is a kept one of another
                configuration (an `InvalidValueError` naming the caller's
                argument, `argument`), or of this configuration but its
                arrays are not of `layout` (written by another model), or
                `load` refuses the folder.

        Example:

        >>> import tempfile, numpy as np
        >>> saved = Checkpoint(tempfile.mkdtemp())
        >>> saved.save([np.zeros(2)], {"config": "lr=0.1", "epoch": 3})
        >>> saved.load_for("lr=0.1", layout=[((2,), "float64")])[2]["epoch"]
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
            if layout is not None:
                self._check_layout(saved[0], layout)
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
        replace it. `remove` deletes the mark with the checkpoint.

        Raises:
            CheckpointInUseError: Another run holds the folder.
        """
        with self._held():
            if self.path.exists():
                (self.directory / KEPT).touch()

    @property
    def kept(self) -> bool:
        """Whether `keep` marked the checkpoint in the folder."""
        return (self.directory / KEPT).is_file() and self.path.exists()

    def remove(self) -> None:
        """Deletes the checkpoint (and its `keep` mark, TensorFlow's checkpoint
        files of earlier versions, and what a kill while saving left), then
        the folder if it is empty, and releases the folder. Other files are
        never touched.

        Raises:
            CheckpointInUseError: Another run holds the folder.
        """
        with self._held():
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
            self.close()  # deletes the lock file: the folder may be empty now
            if not any(self.directory.iterdir()):
                self.directory.rmdir()

    def _take(self, create):
        """Locks the folder unless this checkpoint holds it; returns whether
        it took the lock now. Without `create`, a missing folder is not
        created (nor locked)."""
        try:
            if create:
                self.directory.mkdir(parents=True, exist_ok=True)
            elif not self.directory.is_dir():
                return False
            if self.locked or self._unlockable:
                return False
            lock = _FolderLock.take(self.directory / LOCK, self.argument)
        except OSError as error:
            raise self._unwritable(error) from None
        if lock is None:  # no locks on this filesystem (logged once)
            self._unlockable = True
            return False
        self.close()  # a lock of this checkpoint that a fork left behind
        self._lock = lock
        # Released if the checkpoint is dropped without `close`.
        self._release = weakref.finalize(self, lock.release)
        return True

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        """Inside, the folder (if it exists) is locked: by this checkpoint
        already, or for the time of the block."""
        taken = self._take(create=False)
        try:
            yield
        finally:
            if taken:
                self.close()

    def _unwritable(self, error):
        return ValueError(
            f"Received an invalid value for `{self.argument}`, expected a "
            f"folder where a checkpoint can be written ({error}). "
            f"Received: {self.argument}={str(self.directory)!r}"
        )

    def _partial(self):
        """A new temporary file of this process in the folder, created with
        the mode the umask gives (as `open` creates files, not `mkstemp`'s
        0600): `(descriptor, path)`."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        while True:
            path = self.directory / (
                f".checkpoint-{os.getpid()}-{secrets.token_hex(4)}.partial"
            )
            try:
                return os.open(path, flags, 0o666), path
            except FileExistsError:
                continue

    def _remove_partials(self):
        """Deletes what a kill while saving left: this process's temporary
        files, and, while it holds the folder's lock (no other run saves
        there then), every other process's."""
        mine = f".checkpoint-{os.getpid()}-"
        for path in _files(self.directory):
            if _PARTIAL.fullmatch(path.name) and (
                self.locked or path.name.startswith(mine)
            ):
                path.unlink(missing_ok=True)

    def _check_layout(self, values, layout):
        want = [(tuple(int(n) for n in shape), str(dtype)) for shape, dtype in layout]
        found = [(tuple(v.shape), str(v.dtype)) for v in values]
        if found == want:
            return
        if len(found) != len(want):
            what = f"{len(found)} arrays where this run has {len(want)}"
        else:
            i = next(
                i for i, (a, b) in enumerate(zip(found, want, strict=True)) if a != b
            )
            what = (
                f"array {i} of shape {found[i][0]} and dtype {found[i][1]} where "
                f"this run has shape {want[i][0]} and dtype {want[i][1]}"
            )
        raise ValueError(
            f"The checkpoint {str(self.path)!r} was written by another model "
            f"({what}). Delete it or use another {self.argument}."
        )


class _FolderLock:
    """An advisory lock (`fcntl.flock`) on a folder's lock file, held by one
    open file of this process. A process forked from this one closes its
    copy (closing does not release a `flock` another copy holds), so a
    child that outlives its parent does not keep the folder."""

    held_locks: "weakref.WeakSet[_FolderLock]" = weakref.WeakSet()

    def __init__(self, path, descriptor):
        self.path, self.descriptor, self.pid = path, descriptor, os.getpid()
        _FolderLock.held_locks.add(self)

    @property
    def held(self):
        return self.descriptor is not None and self.pid == os.getpid()

    @classmethod
    def take(cls, path, argument):
        """The lock of `path`, or None where the filesystem has none; raises
        `CheckpointInUseError` if another open file holds it."""
        assert fcntl is not None
        while True:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                holder = os.pread(descriptor, 256, 0)
                os.close(descriptor)
                if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    logger.warning(
                        "Cannot lock %s (%s): the folder is not locked, and two "
                        "runs must not use it at once.",
                        path,
                        error,
                    )
                    return None
                pid, host = _holder(holder)
                raise CheckpointInUseError(path.parent, pid, host, argument) from None
            except BaseException:
                os.close(descriptor)
                raise
            # A holder that released the folder between our `open` and
            # `flock` deleted the file we locked: lock the one at the path.
            try:
                same = os.path.samestat(os.fstat(descriptor), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(descriptor)
        try:
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        except BaseException:
            os.close(descriptor)
            raise
        return cls(path, descriptor)

    def release(self):
        """Deletes the lock file, then releases the lock (in this order: a
        run that opened the file before its deletion finds it gone once it
        holds the lock, and takes a new one)."""
        if self.descriptor is None:
            return
        descriptor, self.descriptor = self.descriptor, None
        if self.pid != os.getpid():
            return  # a forked copy, closed at the fork
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass
        finally:
            os.close(descriptor)

    @classmethod
    def forget_after_fork(cls):
        for lock in list(cls.held_locks):
            if lock.descriptor is not None:
                os.close(lock.descriptor)
                lock.descriptor = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_FolderLock.forget_after_fork)


def _holder(text):
    """`(pid, host)` as a lock file holds them, None where unreadable."""
    parts = text.decode("utf-8", "replace").split()
    pid = int(parts[0]) if parts and parts[0].isdigit() else None
    host = parts[1] if len(parts) > 1 and pid is not None else None
    return pid, host


def _read(path):
    """`(values, named, state)` of the checkpoint file `path`; raises
    `_Damaged` saying what is wrong with it."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
            size = os.fstat(handle.fileno()).st_size
            if not head:
                raise _Damaged("it is empty (0 bytes)")
            if head.startswith(_NPY):
                raise _Damaged(
                    "it is a single NumPy array (an .npy file), not the .npz "
                    "archive of a checkpoint"
                )
            if not (head.startswith(_ZIP) or _ZIP.startswith(head)):
                raise _Damaged(
                    f"it is not an .npz (zip) archive: it starts with {head!r}"
                )
            handle.seek(0)
            try:
                with zipfile.ZipFile(handle) as archive:
                    names = set(archive.namelist())
            except zipfile.BadZipFile as error:
                raise _Damaged(
                    f"it is cut short or damaged: a zip archive of {size} bytes "
                    f"whose end, the directory of its entries, cannot be read "
                    f"({error})"
                ) from None
            if _STATE + ".npy" not in names:
                raise _Damaged(
                    "it is an .npz archive without a 'state' entry, not one "
                    "keras_nalu wrote"
                )
            handle.seek(0)
            with np.load(handle, allow_pickle=False) as file:
                return _read_archive(file)
    except _Damaged:
        raise
    except _DAMAGE as error:
        raise _Damaged(f"it is damaged ({type(error).__name__}: {error})") from None


def _read_archive(file):
    text = _array(file, _STATE)
    try:
        record = json.loads(bytes(text).decode())
    except ValueError as error:  # UnicodeDecodeError and JSONDecodeError too
        raise _Damaged(f"its state is not JSON text ({error})") from None
    dtypes = record.get("dtypes") if isinstance(record, dict) else None
    if not isinstance(dtypes, list) or "state" not in record:
        raise _Damaged("its state lacks the arrays' 'dtypes' or the 'state'")
    found = [name for name in file.files if name.startswith("value/")]
    if sorted(found) != sorted(_VALUE.format(i) for i in range(len(dtypes))):
        raise _Damaged(
            f"it holds {len(found)} arrays where its state lists {len(dtypes)}"
        )
    other = [
        name
        for name in file.files
        if name != _STATE and not name.startswith(("value/", _NAMED))
    ]
    if other:
        raise _Damaged(f"it holds entries keras_nalu does not write: {other}")
    values = [
        _from_raw(_array(file, _VALUE.format(i)), dtype, i)
        for i, dtype in enumerate(dtypes)
    ]
    named = {
        name[len(_NAMED) :]: _array(file, name)
        for name in file.files
        if name.startswith(_NAMED)
    }
    return values, named, record["state"]


def _array(file, key):
    """`file[key]`, or a `_Damaged` naming the entry where it cannot be read
    (e.g. its CRC does not match: its bytes changed after it was written)."""
    try:
        return file[key]
    except _DAMAGE as error:
        raise _Damaged(
            f"its entry {key!r} is damaged ({type(error).__name__}: {error})"
        ) from None


def _files(folder):
    return [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []


def _raw(value):
    """`value`'s bytes: NumPy's own format cannot hold every dtype Keras
    variables have (bfloat16, from ml_dtypes, loads only with pickle)."""
    value = np.asarray(value)  # (np.ascontiguousarray makes a scalar 1-D)
    raw = np.frombuffer(value.tobytes(), np.uint8)
    return raw.reshape(*value.shape, value.dtype.itemsize)


def _from_raw(raw, dtype, index):
    """The array `_raw` wrote, of `dtype`, the `index`-th of the checkpoint
    (named in the `_Damaged` raised where `raw` does not fit `dtype`)."""
    try:
        if dtype == "bfloat16":
            import ml_dtypes  # a dependency of Keras 3

            dtype = ml_dtypes.bfloat16
        dtype = np.dtype(dtype)
    except TypeError:
        raise _Damaged(f"its state gives array {index} the dtype {dtype!r}") from None
    if raw.dtype != np.uint8 or raw.ndim == 0 or raw.shape[-1] != dtype.itemsize:
        raise _Damaged(
            f"its array {index} ({raw.dtype} of shape {raw.shape}) is not of "
            f"the {dtype} its state lists"
        )
    return np.frombuffer(raw.tobytes(), dtype).reshape(raw.shape[:-1])


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
