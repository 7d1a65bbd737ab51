"""Batches for `keras_nalu.training.fit`: one epoch's batches of arrays in
an order drawn from `(seed, epoch)` alone, so that a resumed run reads the
same batches; a `tf.data.Dataset` on the tensorflow backend, a
`keras.utils.PyDataset` on the others (which then need no TensorFlow)."""

import keras
import numpy as np


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
