"""TFRecord helpers shared by every data pipeline: build, write and decode `tf.train.Example`s.

The original scripts store int features as int64 lists and floats as float lists
(`create_int_feature`, `create_float_feature` in the original `run_classifier.py` and
`create_pretraining_data.py`; spec `bert.md` 5.6, 8.5). Readers cast int64 to int32 as the
original `_decode_record` does.
"""

import collections
from typing import Dict, Iterable, Iterator, List, Mapping, Sequence, Union

import tensorflow as tf

from bert_tf.atomic_files import (CommitOnExit, atomic_path, check_output_path,
                                   exit_atomic_context, write_error)
from bert_tf.errors import FlagError, InputDataError

Feature = Union[Sequence[int], Sequence[float]]


def create_int_feature(values: Iterable[int]) -> tf.train.Feature:
    """An int64-list feature (original `create_int_feature`)."""
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def create_float_feature(values: Iterable[float]) -> tf.train.Feature:
    """A float-list feature (original `create_float_feature`)."""
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def make_example(int_features: Mapping[str, Sequence[int]],
                 float_features: Mapping[str, Sequence[float]] = None) -> tf.train.Example:
    """A `tf.train.Example` from named int and float lists, in the given key order."""
    feats = collections.OrderedDict()
    for k, v in int_features.items():
        feats[k] = create_int_feature(v)
    for k, v in (float_features or {}).items():
        feats[k] = create_float_feature(v)
    return tf.train.Example(features=tf.train.Features(feature=feats))


class AtomicTFRecordWriter(CommitOnExit):
    """A `tf.io.TFRecordWriter` that writes to a temporary file and renames it on close.

    Use as a context manager; on an exception the temporary file is removed and ``path`` is
    left as it was (:mod:`bert_tf.atomic_files`).

    Raises:
      OutputPathError: ``path`` is a folder, or its folder cannot be created or written; a
        write or the close failed (a full disk: one line naming ``path``, the temporary file
        removed, :func:`bert_tf.atomic_files.write_error`).
    """

    def __init__(self, path: str):
        self.path = path
        check_output_path(path, create_parent=True)
        self._context = atomic_path(path, suffix=".tfrecord")
        self._tmp = self._context.__enter__()
        self._writer = tf.io.TFRecordWriter(self._tmp)
        self.count = 0

    def write(self, example: Union[tf.train.Example, bytes]) -> None:
        data = example if isinstance(example, bytes) else example.SerializeToString()
        try:
            self._writer.write(data)
        except (tf.errors.OpError, OSError) as e:
            raise write_error(self.path, e) from e
        self.count += 1

    def prepare(self) -> None:
        """Writes out and closes the temporary file (the rename is :meth:`commit`)."""
        try:
            self._writer.close()
        except (tf.errors.OpError, OSError) as e:
            self.abort()  # close() is not followed by abort(): drop the temporary file now
            raise write_error(self.path, e) from e

    def commit(self) -> None:
        self._context.__exit__(None, None, None)

    def close(self) -> None:
        self.prepare()
        self.commit()

    def abort(self) -> None:
        if getattr(self, "_aborted", False):
            return
        self._aborted = True
        try:
            self._writer.close()
        except Exception:  # noqa: BLE001 - the temporary file is dropped anyway
            pass
        exit_atomic_context(self._context)


def decode_example(serialized: bytes) -> Dict[str, List]:
    """Decodes one serialized Example into ``{name: list of int or float}`` (no schema needed)."""
    ex = tf.train.Example.FromString(serialized)
    out = {}
    for k, f in ex.features.feature.items():
        kind = f.WhichOneof("kind")
        if kind == "int64_list":
            out[k] = list(f.int64_list.value)
        elif kind == "float_list":
            out[k] = list(f.float_list.value)
        else:
            out[k] = list(f.bytes_list.value)
    return out


def read_examples(path: str) -> Iterator[Dict[str, List]]:
    """Yields every record of a TFRecord file decoded with :func:`decode_example`.

    Raises:
      InputDataError: the file is missing or not a TFRecord file (names it and the record).
    """
    if not tf.io.gfile.exists(path):
        raise InputDataError(f"{path}: TFRecord file not found")
    i = 0
    try:
        for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
            yield decode_example(raw)
            i += 1
    except tf.errors.DataLossError as e:
        raise InputDataError(f"{path}: record {i} is corrupt or the file is not a TFRecord ({e.message})") from e


def fixed_len_schema(int_lengths: Mapping[str, int], float_lengths: Mapping[str, int] = None):
    """A parse schema of `tf.io.FixedLenFeature`s: int64 for ``int_lengths``, float32 others."""
    schema = {k: tf.io.FixedLenFeature([n], tf.int64) for k, n in int_lengths.items()}
    for k, n in (float_lengths or {}).items():
        schema[k] = tf.io.FixedLenFeature([n], tf.float32)
    return schema


def decode_record(record: tf.Tensor, schema) -> Dict[str, tf.Tensor]:
    """Parses one record with ``schema`` and casts int64 to int32 (original `_decode_record`)."""
    example = tf.io.parse_single_example(record, schema)
    return {k: (tf.cast(v, tf.int32) if v.dtype == tf.int64 else v) for k, v in example.items()}


def shard_for_input_context(d: tf.data.Dataset, ctx, train_batch_size: int):
    """This input pipeline's part of a training dataset, and its per-replica batch size.

    With a ``tf.distribute.InputContext`` of several input pipelines (multi-worker) ``d`` is
    sharded by pipeline id; the batch size is ``ctx.get_per_replica_batch_size``. Without
    ``ctx`` (``None``: one pipeline, one replica) both come back unchanged. Shared by the
    classifier's and the siamese training inputs.

    Returns:
      ``(dataset, batch_size)``.

    Raises:
      FlagError: ``train_batch_size`` is not a multiple of the number of replicas (names
        ``--train_batch_size``).
    """
    batch_size = train_batch_size
    if ctx is not None:
        if ctx.num_input_pipelines > 1:
            d = d.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        try:
            batch_size = ctx.get_per_replica_batch_size(train_batch_size)
        except ValueError as e:
            raise FlagError(f"--train_batch_size={train_batch_size}: {e}") from e
    return d, batch_size
