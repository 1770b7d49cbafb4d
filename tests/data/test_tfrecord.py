"""bert_tf.data.tfrecord.shard_for_input_context: the multi-worker split of a training input
(values worked out by hand from tf.distribute.InputContext's documented rules)."""
import pytest
import tensorflow as tf

from bert_tf.data.tfrecord import shard_for_input_context
from bert_tf.errors import FlagError


def test_no_context_leaves_dataset_and_batch_size():
    d, batch_size = shard_for_input_context(tf.data.Dataset.range(6), None, 32)
    assert batch_size == 32
    assert list(d.as_numpy_iterator()) == [0, 1, 2, 3, 4, 5]


def test_second_of_two_pipelines_takes_every_other_record_and_a_replica_share():
    ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1,
                                     num_replicas_in_sync=4)
    d, batch_size = shard_for_input_context(tf.data.Dataset.range(8), ctx, 32)
    assert batch_size == 8  # 32 / 4 replicas
    assert list(d.as_numpy_iterator()) == [1, 3, 5, 7]


def test_one_pipeline_is_not_sharded():
    ctx = tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                     num_replicas_in_sync=2)
    d, batch_size = shard_for_input_context(tf.data.Dataset.range(4), ctx, 6)
    assert batch_size == 3
    assert list(d.as_numpy_iterator()) == [0, 1, 2, 3]


def test_batch_not_a_multiple_of_replicas_names_the_flag():
    ctx = tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                     num_replicas_in_sync=4)
    with pytest.raises(FlagError, match=r"^--train_batch_size=6: "):
        shard_for_input_context(tf.data.Dataset.range(4), ctx, 6)
