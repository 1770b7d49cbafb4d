"""XLNet pretraining input pipeline: the original ``data_utils.get_input_fn`` as tf.data
(spec ``xlnet.md`` 6.6-6.7).

Records of :mod:`bert_tf.xlnet.data.pretraining` -> parsed examples with a sampled
factorisation order per half (:func:`local_perm`):

* ``input_k`` int32 ``[S]`` (the tokens), ``input_q`` float32 ``[S]`` (1 = a prediction
  target), ``seg_id`` int32 ``[S]``, ``label`` int32 ``[1]``;
* ``perm_mask`` float32 ``[S, S]`` (``perm_mask[i, j] = 1``: query ``i`` cannot see key ``j``);
* with ``num_predict`` P: ``target_mapping`` float32 ``[P, S]`` (one-hot rows of the target
  positions, zero rows as padding), ``target`` int32 ``[P]``, ``target_mask`` float32 ``[P]``;
  without it ``target``/``target_mask`` are ``[S]``.

Examples are not shuffled (the streams must stay consecutive for the memory); only the file
order is. The permutation draw goes through ``shuffle_fn`` (default ``tf.random.shuffle``,
as the original's ``tf.random_shuffle``), the seam the golden test fixes.
"""

import json
import os
from typing import Callable, Dict, List, Optional

import tensorflow as tf

from bert_tf.data.text_lines import unreadable_input
from bert_tf.data.tfrecord_bytes import count_framed_records
from bert_tf.xlnet.data.pretraining import format_filename
from bert_tf.errors import FlagError, InputDataError
from bert_tf.tokenization.sentencepiece_prepro import CLS_ID, SEP_ID

ShuffleFn = Callable[[tf.Tensor], tf.Tensor]


def local_perm(inputs: tf.Tensor, targets: tf.Tensor, is_masked: tf.Tensor, perm_size: int,
               seq_len: int, shuffle_fn: ShuffleFn = tf.random.shuffle):
    """One half's factorisation order and masks (original ``_local_perm``, spec 6.7).

    Args:
      inputs, targets: int64 ``[n]``. is_masked: bool ``[n]``. perm_size: block size; ``n``
        (``seq_len``) a multiple of it. shuffle_fn: shuffles the rows of an int64
        ``[perm_size, n / perm_size]`` tensor (one permutation of the within-block offsets
        applied to every block).

    Returns:
      ``(perm_mask float32 [n, n], new_targets int64 [n], target_mask float32 [n],
      inputs_k int64 [n], inputs_q float32 [n])``.
    """
    index = tf.range(seq_len, dtype=tf.int64)
    index = tf.transpose(tf.reshape(index, [-1, perm_size]))       # [perm_size, n / perm_size]
    index = shuffle_fn(index)
    index = tf.reshape(tf.transpose(index), [-1])                  # [n]: rank in the order

    non_func = tf.logical_not(tf.logical_or(tf.equal(inputs, SEP_ID), tf.equal(inputs, CLS_ID)))
    non_mask = tf.logical_and(tf.logical_not(is_masked), non_func)
    masked_or_func = tf.logical_not(non_mask)
    # Context tokens come "before everything" (-1): all see them, they see no target.
    rev_index = tf.where(non_mask, -tf.ones([seq_len], dtype=tf.int64), index)
    target_tokens = tf.logical_and(masked_or_func, non_func)
    target_mask = tf.cast(target_tokens, tf.float32)
    # Targets cannot see themselves; functional tokens can.
    self_rev_index = tf.where(target_tokens, rev_index, rev_index + 1)
    perm_mask = tf.cast(tf.logical_and(self_rev_index[:, None] <= rev_index[None, :],
                                       masked_or_func), tf.float32)  # [n, n]
    new_targets = tf.concat([inputs[0:1], targets[:-1]], axis=0)    # the token at each position
    return perm_mask, new_targets, target_mask, inputs, target_mask


def make_parser(seq_len: int, reuse_len: int, perm_size: int, num_predict: Optional[int],
                use_bfloat16: bool = False, shuffle_fn: ShuffleFn = tf.random.shuffle):
    """The original ``parser`` of ``get_dataset``: a record -> the example of the module doc.

    Raises:
      FlagError: ``perm_size`` above ``reuse_len`` or ``seq_len - reuse_len``, or not dividing
        them (the original asserts the first).
    """
    non_reuse_len = seq_len - reuse_len
    if not (0 < perm_size <= reuse_len and perm_size <= non_reuse_len):
        raise FlagError(f"--perm_size={perm_size} must be in [1, min(reuse_len, seq_len - "
                        f"reuse_len)] = [1, {min(reuse_len, non_reuse_len)}]")
    if reuse_len % perm_size or non_reuse_len % perm_size:
        raise FlagError(f"--perm_size={perm_size} must divide reuse_len ({reuse_len}) and "
                        f"seq_len - reuse_len ({non_reuse_len})")
    schema = {name: tf.io.FixedLenFeature([seq_len], tf.int64)
              for name in ("input", "target", "seg_id", "is_masked")}
    schema["label"] = tf.io.FixedLenFeature([1], tf.int64)

    def parser(record):
        example = tf.io.parse_single_example(record, schema)
        inputs = example.pop("input")
        target = example.pop("target")
        is_masked = tf.cast(example.pop("is_masked"), tf.bool)
        halves = [local_perm(inputs[sl], target[sl], is_masked[sl], perm_size, n, shuffle_fn)
                  for sl, n in ((slice(0, reuse_len), reuse_len),
                                (slice(reuse_len, None), non_reuse_len))]
        (pm_0, tgt_0, tm_0, k_0, q_0), (pm_1, tgt_1, tm_1, k_1, q_1) = halves
        # The reuse half cannot see the rest; the rest sees all of the reuse half.
        perm_mask = tf.concat([tf.concat([pm_0, tf.ones([reuse_len, non_reuse_len])], 1),
                               tf.concat([tf.zeros([non_reuse_len, reuse_len]), pm_1], 1)], 0)
        target = tf.concat([tgt_0, tgt_1], 0)
        target_mask = tf.concat([tm_0, tm_1], 0)
        if num_predict is not None:
            is_target = tf.cast(target_mask, tf.bool)
            indices = tf.boolean_mask(tf.range(seq_len, dtype=tf.int64), is_target)
            actual = tf.shape(indices)[0]
            pad_len = num_predict - actual
            mapping = tf.one_hot(indices, seq_len, dtype=tf.float32)
            mapping = tf.concat([mapping, tf.zeros([pad_len, seq_len])], 0)
            example["target_mapping"] = tf.reshape(mapping, [num_predict, seq_len])
            target = tf.concat([tf.boolean_mask(target, is_target),
                                tf.zeros([pad_len], dtype=target.dtype)], 0)
            example["target"] = tf.reshape(target, [num_predict])
            example["target_mask"] = tf.reshape(
                tf.concat([tf.ones([actual]), tf.zeros([pad_len])], 0), [num_predict])
        else:
            example["target"] = tf.reshape(target, [seq_len])
            example["target_mask"] = tf.reshape(target_mask, [seq_len])
        example["perm_mask"] = tf.reshape(perm_mask, [seq_len, seq_len])
        example["input_k"] = tf.reshape(tf.concat([k_0, k_1], 0), [seq_len])
        example["input_q"] = tf.reshape(tf.concat([q_0, q_1], 0), [seq_len])
        float_type = tf.bfloat16 if use_bfloat16 else tf.float32
        return {k: (tf.cast(v, tf.int32) if v.dtype == tf.int64 else tf.cast(v, float_type))
                for k, v in example.items()}

    return parser


def check_record_count(info_path: str, record_files: List[str], expected: int) -> None:
    """Checks that the record files a record_info JSON lists hold the records it counts
    (``num_batch * bsz_per_host``), from the files' framing
    (:func:`bert_tf.data.tfrecord_bytes.count_framed_records`): a copy cut short anywhere,
    at a record boundary too, is found before training (TensorFlow's reader takes a cut
    inside a header for the end of the file).

    Raises:
      InputDataError: a file cut short or damaged, or fewer (more) records than counted.
    """
    held = sum(count_framed_records(f) for f in record_files)
    if held != expected:
        raise InputDataError(f"{', '.join(record_files)}: {held} records, but {info_path} counts "
                             f"{expected} (num_batch x bsz_per_host): a copy cut short, or "
                             "files of another run?")


def find_record_info(tfrecord_dir: str, split: str, bsz_per_host: int, seq_len: int,
                     reuse_len: int, bi_data: bool, mask_alpha: int, mask_beta: int,
                     uncased: bool, num_predict: Optional[int],
                     num_passes: Optional[int] = None) -> Dict:
    """The record files of every ``record_info-<split>-*`` JSON whose name carries these
    creation flags (original ``get_input_fn``, spec 6.6), re-rooted to the folder where the
    info was found. ``tfrecord_dir`` may be a comma-separated list.

    Returns:
      ``{"num_batch": int, "filenames": [paths]}``.

    Raises:
      InputDataError: no matching record_info (names the glob; the original trains on
        nothing), or an unreadable one.
    """
    pattern = format_filename(f"record_info-{split}-*", bsz_per_host=bsz_per_host,
                              seq_len=seq_len, bi_data=bi_data, suffix="json",
                              mask_alpha=mask_alpha, mask_beta=mask_beta, reuse_len=reuse_len,
                              uncased=uncased, fixed_num_predict=num_predict)
    info = {"num_batch": 0, "filenames": []}
    globs, listed = [], []
    for record_dir in tfrecord_dir.split(","):
        globs.append(os.path.join(record_dir, pattern))
        for path in sorted(tf.io.gfile.glob(globs[-1])):
            try:
                with tf.io.gfile.GFile(path, "r") as f:
                    one = json.load(f)
                names, num_batch = list(one["filenames"]), int(one["num_batch"])
            except (ValueError, KeyError, TypeError) as e:
                raise InputDataError(f"{path}: not a record_info JSON ({e})") from e
            except (tf.errors.OpError, OSError) as e:
                raise unreadable_input(path, e) from e
            listed.append((path, [os.path.join(record_dir, os.path.basename(n)) for n in names],
                           num_batch))
            if num_passes is not None:  # the original's pass filter never triggers (spec 6.6)
                kept = min(num_passes, len(names))
                num_batch = int(num_batch * kept / len(names))
                names = names[:kept]
            info["num_batch"] += num_batch
            info["filenames"] += [os.path.join(record_dir, os.path.basename(n)) for n in names]
    missing = [f for f in info["filenames"] if not tf.io.gfile.exists(f)]
    if missing:
        raise InputDataError(f"{missing[0]}: record file listed in its record_info JSON is "
                             f"missing ({len(missing)} of {len(info['filenames'])} missing)")
    for f in info["filenames"]:  # permission denied: one line now, not a trace mid-training
        try:
            with tf.io.gfile.GFile(f, "rb") as handle:
                handle.read(1)
        except (tf.errors.OpError, OSError) as e:
            raise unreadable_input(f, e) from e
    for path, names, num_batch in listed:
        check_record_count(path, names, num_batch * bsz_per_host)
    if not info["filenames"]:
        raise InputDataError(
            f"no record_info file matches {' or '.join(globs)}: the data must be made by "
            "create_pretraining_data.py with the same bsz_per_host, seq_len, reuse_len, "
            "bi_data, mask_alpha, mask_beta, uncased and num_predict")
    return info


def dataset_fn_builder(filenames: List[str], bsz_per_core: int, parser,
                       num_hosts: int = 1) -> Callable:
    """``dataset_fn(input_context=None)`` of the original ``parse_files_to_dataset``: the
    host's contiguous range of files (shuffled by file when several), records cached raw,
    parsed, repeated, batched ``bsz_per_core`` with ``drop_remainder``.

    Under ``tf.distribute`` the host is ``input_context.input_pipeline_id`` of
    ``num_input_pipelines``.
    """

    def dataset_fn(input_context: Optional[tf.distribute.InputContext] = None):
        hosts, host_id = num_hosts, 0
        if input_context is not None and input_context.num_input_pipelines > 1:
            hosts, host_id = input_context.num_input_pipelines, input_context.input_pipeline_id
        paths = filenames
        if len(filenames) >= hosts > 1:
            per_host = len(filenames) // hosts
            end = len(filenames) if host_id == hosts - 1 else (host_id + 1) * per_host
            paths = filenames[host_id * per_host:end]
        d = tf.data.Dataset.from_tensor_slices(paths)
        if len(paths) > 1:
            d = d.shuffle(len(paths))
        d = tf.data.TFRecordDataset(d).cache().map(parser).repeat()
        return d.batch(bsz_per_core, drop_remainder=True).prefetch(tf.data.AUTOTUNE)

    return dataset_fn

