"""Batches for `keras_nalu.training.fit`: one epoch's batches of arrays in
an order drawn from `(seed, epoch)` alone, so that a resumed run reads the
same batches; a `tf.data.Dataset` on the tensorflow backend, a
`keras.utils.PyDataset` on the others (which then need no TensorFlow); and
the tasks' streams of fresh batches (`FreshBatches`, `DigitSequenceBatches`).

The tasks' own modules import no Keras; this one, which subclasses Keras's
`PyDataset`, is imported when batches are first asked for."""

import keras
import numpy as np

from keras_nalu import validation
from nalu_research.tasks import mnist


class Shuffled(keras.utils.PyDataset):
    """The batches of one epoch over the arrays `(x, y)`, in the order of a
    permutation drawn from `seed` (the same order whenever it is asked for),
    or in their own order for `seed=None`."""

    def __init__(self, x, y, batch_size, seed=None):
        super().__init__()
        self.x, self.y, self.batch_size = x, y, batch_size
        self.order = _order(len(y), seed)

    def __len__(self):
        return -(-len(self.y) // self.batch_size)

    def __getitem__(self, i):
        index = self.order[i * self.batch_size : (i + 1) * self.batch_size]
        return self.x[index], self.y[index]


class OneBatch(keras.utils.PyDataset):
    """An epoch of one step: `batch`, e.g. `(x, y, sample_weight)`, each
    part an array or a dict of arrays."""

    def __init__(self, batch):
        super().__init__()
        self.batch = batch

    def __len__(self):
        return 1

    def __getitem__(self, i):
        if i != 0:
            raise IndexError(f"OneBatch has one batch; asked for batch {i}")
        return self.batch


class FreshBatches(keras.utils.PyDataset):
    """`StaticArithmetic.training_batches`: batch `i` is `task.sample`'s
    from the seed `(seed, start + i)`."""

    def __init__(self, task, batch_size, steps, seed, start=0):
        super().__init__()
        self.task = task
        self.batch_size = validation.positive_int("batch_size", batch_size)
        self.steps = validation.positive_int("steps", steps)
        self.seed = seed
        self.start = validation.non_negative_int("start", start)

    def __len__(self):
        return self.steps

    def __getitem__(self, index):
        seed = (self.seed, self.start + index)
        return self.task.sample(self.batch_size, "train", seed=seed)


class DigitSequenceBatches(keras.utils.PyDataset):
    """`steps` fresh training batches of digit sequences, for `model.fit`.

    Batch `i` holds `batch_size` sequences of `length` images drawn from the
    seed `(seed, start + i)`: images of shape `(batch_size, length, h, w, 1)`
    and the targets of `task` (`"count"`: `(batch_size, 10)`, `"sum"`:
    `(batch_size, 1)`). With `max_shift` > 0 every image is moved by up to
    that many pixels (`mnist.shift_images`, from the same seed): an augmentation
    of a small training set. Training in chunks (`start=0`, then
    `start=steps`, ...) sees the batches of one long run.
    """

    def __init__(
        self,
        images,
        labels,
        task,
        batch_size,
        length,
        steps,
        seed=0,
        start=0,
        max_shift=0,
    ):
        super().__init__()
        self.images, self.labels = images, np.asarray(labels)
        self.task = validation.one_of("task", task, mnist.SEQUENCE_TASKS)
        self.batch_size = validation.positive_int("batch_size", batch_size)
        self.length = validation.positive_int("length", length)
        self.steps = validation.positive_int("steps", steps)
        self.seed = seed
        self.start = validation.non_negative_int("start", start)
        self.max_shift = mnist._check_shift(max_shift, np.shape(images))

    def __len__(self):
        return self.steps

    def __getitem__(self, i):
        index = mnist.sample_sequences(
            len(self.labels),
            self.batch_size,
            self.length,
            seed=(self.seed, self.start + i),
        )
        images = mnist.shift_images(
            self.images[index], self.max_shift, seed=(self.seed, self.start + i, 1)
        )
        return images, mnist.sequence_targets(self.task, self.labels[index])


def _order(n, seed):
    return np.arange(n) if seed is None else np.random.default_rng(seed).permutation(n)


def array_batches(x, y, batch_size, seed=None):
    """One epoch's batches of the arrays `(x, y)` for `training.fit`, in the
    order of a permutation drawn from `seed` (`None`: their own order): a
    `tf.data.Dataset` on the tensorflow backend, the same batches as a
    `Shuffled` on the others, which then need no TensorFlow."""
    if keras.backend.backend() != "tensorflow":
        return Shuffled(x, y, batch_size, seed)
    import tensorflow as tf

    order = _order(len(y), seed)
    return tf.data.Dataset.from_tensor_slices((x[order], y[order])).batch(batch_size)


def shuffled_epochs(x, y, batch_size, seed):
    """`data_fn(epoch)` for `training.fit`: the arrays `(x, y)` in the
    epoch's own order, drawn from `(seed, epoch)` alone, so that a resumed
    run reads the same batches (`array_batches`)."""
    return lambda epoch: array_batches(x, y, batch_size, seed=(seed, epoch))


def one_batch(batch):
    """`batch` as an epoch of one step for `training.fit`: a
    `tf.data.Dataset` on the tensorflow backend, a `OneBatch` on the others,
    which then need no TensorFlow."""
    if keras.backend.backend() != "tensorflow":
        return OneBatch(batch)
    import tensorflow as tf

    return tf.data.Dataset.from_tensors(batch)
