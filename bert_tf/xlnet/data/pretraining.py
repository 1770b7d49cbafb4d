"""XLNet pretraining records: the original ``data_utils.py`` ``create_data`` (spec ``xlnet.md`` 6).

Text (one sentence per line, a blank line between documents) -> SentencePiece ids with
alternating sentence ids (:func:`encode_corpus_file`, spec 6.3) -> ``bsz_per_host`` streams
(:func:`stream_rows`, 6.4) -> one ``tf.train.Example`` per stream row and step of ``reuse_len``
(:func:`iter_batches`, 6.5): ``input``, ``target``, ``seg_id``, ``is_masked`` (int64
``[seq_len]``) and ``label`` (int64 ``[1]``).

The records equal the original's only with the same random call sequence, so the two random
sources of the original are explicit here: ``py_rng`` plays Python's global ``random`` (which
the original never seeds; ``--random_seed`` seeds it) and ``np_rng`` plays numpy's global state,
which the original seeds with ``100 * task + pass_id`` just before shuffling the files.

Quirks kept because the published records depend on them (golden README "Surprises" 1-2):

* ``_sample_mask``'s n-gram end loop tests the piece at ``beg`` instead of ``end``, so a span is
  exactly ``n`` pieces long from a word-start piece, and a span reaching the segment end stops
  the span sampling (:func:`sample_mask`);
* ``corpus_info.json`` always says ``vocab_size`` 32000 (:data:`VOCAB_SIZE`), whatever the
  SentencePiece model.
"""

import array
import json
import os
from typing import Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from bert_tf.atomic_files import atomic_write_text
from bert_tf.data.text_lines import chunks
from bert_tf.data.tfrecord import make_example
from bert_tf.data.text_lines import read_utf8_lines
from bert_tf.data.tfrecord_bytes import RecordFilesTogether
from bert_tf.atomic_files import check_output_names, make_output_dir
from bert_tf.errors import FlagError, InputDataError
from bert_tf.tokenization.sentencepiece_prepro import (CLS_ID, EOD_ID, SEP_ID, VOCAB_SIZE,
                                                       encode_ids, preprocess_text)

# Characters that are a word start on their own (original `_is_start_piece`).
_START_CHARS = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')
MAX_GRAM = 5


def format_filename(prefix: str, bsz_per_host: int, seq_len: int, bi_data: bool, suffix: str,
                    mask_alpha: int = 5, mask_beta: int = 1, reuse_len: Optional[int] = None,
                    uncased: bool = False, fixed_num_predict: Optional[int] = None) -> str:
    """The original ``format_filename`` (spec 6.3).

    ``{prefix}.bsz-{B}.seqlen-{S}.{reuse-R.}{uncased.}{bi|uni}.alpha-{a}.beta-{b}.{fnp-P.}``
    ``{suffix}``, e.g. ``train-0-0.bsz-4.seqlen-128.reuse-64.bi.alpha-6.beta-1.fnp-21.tfrecords``.
    """
    reuse = "" if reuse_len is None else f"reuse-{reuse_len}."
    cased = "uncased." if uncased else ""
    direction = "bi" if bi_data else "uni"
    fnp = "" if fixed_num_predict is None else f"fnp-{fixed_num_predict}."
    return (f"{prefix}.bsz-{bsz_per_host}.seqlen-{seq_len}.{reuse}{cased}{direction}"
            f".alpha-{mask_alpha}.beta-{mask_beta}.{fnp}{suffix}")


def is_start_piece(piece: str) -> bool:
    """A piece that starts a word: ``▁...``, ``<...>`` or one punctuation character
    (original ``_is_start_piece``)."""
    return piece.startswith("\u2581") or piece.startswith("<") or piece in _START_CHARS


_CHUNK_LINES = 2000  # lines per worker task
_worker_sp = None


def _init_worker(sp_path: str) -> None:
    global _worker_sp  # pylint: disable=global-statement
    from bert_tf.tokenization.sentencepiece_prepro import load_sp_model
    _worker_sp = load_sp_model(sp_path) if sp_path else None


def encode_lines(lines: Sequence[str], uncased: bool, from_raw_text: bool = True,
                 sp_model=None) -> List[Optional[List[int]]]:
    """The ids of each line (None for a blank one): ``encode_ids(preprocess_text(line.strip(),
    lower=uncased))``, or the line's space-separated ids when ``from_raw_text`` is False.
    In a worker process ``sp_model`` defaults to the worker's model.

    Raises:
      ValueError: an id line that is not integers.
    """
    sp_model = sp_model or _worker_sp
    out: List[Optional[List[int]]] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            out.append(None)
        elif from_raw_text:
            out.append(encode_ids(sp_model, preprocess_text(stripped, lower=uncased)))
        else:
            out.append([int(t) for t in stripped.split()])
    return out


class _BadLine(NamedTuple):
    index: int  # in its chunk
    message: str


def _encode_chunk(task, sp_model=None):
    lines, uncased, from_raw_text = task
    try:
        return encode_lines(lines, uncased, from_raw_text, sp_model=sp_model)
    except ValueError:
        for i, line in enumerate(lines):
            try:
                encode_lines([line], uncased, from_raw_text, sp_model=sp_model)
            except ValueError as e:
                return _BadLine(i, str(e))
        raise


def encode_corpus_file(lines, sp_model, uncased: bool, use_eod: bool = True,
                       from_raw_text: bool = True, path: str = "<input>", pool=None
                       ) -> Tuple[np.ndarray, np.ndarray, int]:
    """One input file -> ``(ids int64 [T], sent_ids bool [T], line count)`` (spec 6.3).

    Each non-empty line is one sentence (:func:`encode_lines`) whose tokens all carry one
    boolean sentence id; the id alternates line by line. A blank line gives ``<eod>`` (if
    ``use_eod``) with the id of the sentence before it, the id being flipped once more first,
    as the original does. With ``pool`` (a ``multiprocessing`` pool made by
    :func:`worker_pool`) the lines are encoded in the workers, in order: the same result.
    Memory: 9 bytes per token (int64 id + bool), plus the text of the chunks in flight.

    Raises:
      InputDataError: a line of an id file that is not integers (names file and line).
    """
    ids = array.array("q")
    sent_ids = bytearray()
    sent_id, line_cnt = True, 0
    tasks = ((chunk, uncased, from_raw_text) for chunk in chunks(lines, _CHUNK_LINES))
    if pool is not None:
        encoded_chunks = pool.imap(_encode_chunk, tasks)
    else:
        encoded_chunks = (_encode_chunk(t, sp_model) for t in tasks)
    for chunk_index, encoded in enumerate(encoded_chunks):
        if isinstance(encoded, _BadLine):
            raise InputDataError(f"{path}:{chunk_index * _CHUNK_LINES + encoded.index + 1}: "
                                 f"--from_raw_text=False wants space-separated integer ids "
                                 f"({encoded.message})")
        for sentence in encoded:
            line_cnt += 1
            if sentence is None:
                if not use_eod:
                    continue
                sent_id = not sent_id
                sentence = [EOD_ID]
            ids.extend(sentence)
            sent_ids.extend(b"\x01" * len(sentence) if sent_id else bytes(len(sentence)))
            sent_id = not sent_id
    return (np.frombuffer(ids, dtype=np.int64).copy(),
            np.frombuffer(bytes(sent_ids), dtype=bool).copy(), line_cnt)


def worker_pool(num_workers: int, sp_path: str):
    """A pool of ``num_workers`` processes that each load ``sp_path`` once, for
    :func:`encode_corpus_file`; None for ``num_workers <= 1``. Use as a context manager."""
    if num_workers <= 1:
        return None
    import multiprocessing

    return multiprocessing.get_context("fork").Pool(num_workers, _init_worker, (sp_path,))


def concat_shards(shards: Sequence[Tuple[np.ndarray, np.ndarray]], np_rng: np.random.RandomState
                  ) -> Tuple[np.ndarray, np.ndarray]:
    """Shuffles the files (``np_rng.permutation``) and joins them, inverting a file's sentence
    ids where its first id equals the previous file's last, so ids keep alternating (spec 6.3).

    Returns:
      ``(ids int64 [T], sent_ids bool [T])``.
    """
    ids_list, sent_list, prev = [], [], None
    for index in np_rng.permutation(len(shards)):
        ids, sent_ids = shards[index]
        if prev is not None and sent_ids[0] == prev:
            sent_ids = np.logical_not(sent_ids)
        ids_list.append(ids)
        sent_list.append(sent_ids)
        prev = sent_ids[-1]
    return np.concatenate(ids_list), np.concatenate(sent_list)


def batchify(data: np.ndarray, n: int) -> np.ndarray:
    """Drops the tail so the length divides ``n``; ``[n, T // n]``, row k the k-th contiguous
    chunk (original ``batchify``)."""
    num_step = len(data) // n
    return data[:n * num_step].reshape(n, num_step)


def stream_rows(ids: np.ndarray, sent_ids: np.ndarray, bsz_per_host: int, num_core: int,
                bi_data: bool) -> Tuple[np.ndarray, np.ndarray]:
    """The ``[bsz_per_host, T]`` streams of ``create_tfrecords`` (spec 6.4).

    With ``bi_data`` each core's first half of rows are forward chunks and its second half
    the same chunks time-reversed.

    Raises:
      FlagError: ``bi_data`` with ``bsz_per_host`` not a multiple of ``2 * num_core``.
    """
    if not bi_data:
        return batchify(ids, bsz_per_host), batchify(sent_ids, bsz_per_host)
    if bsz_per_host % (2 * num_core):
        raise FlagError(f"--bi_data=True needs --bsz_per_host ({bsz_per_host}) to be a multiple "
                        f"of 2 * num_core_per_host ({2 * num_core})")
    bsz_per_core = bsz_per_host // num_core
    out = []
    for data in (ids, sent_ids):
        fwd = batchify(data, bsz_per_host // 2).reshape(num_core, 1, bsz_per_core // 2, -1)
        bwd = fwd[:, :, :, ::-1]
        out.append(np.concatenate([fwd, bwd], 1).reshape(bsz_per_host, -1))
    return out[0], out[1]


def split_a_and_b(data: np.ndarray, sent_ids: np.ndarray, begin_idx: int, tot_len: int,
                  py_rng) -> Optional[Tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]]:
    """Segments A and B of ``tot_len`` tokens after ``begin_idx`` (original ``_split_a_and_b``
    with ``extend_target=True``, spec 6.5).

    Args:
      data: int64 ``[T]`` one stream row. sent_ids: bool ``[T]``.
      py_rng: Python ``random`` (or a ``random.Random``): ``random()``, ``choice``, ``randint``.

    Returns:
      ``(a, b, label, a_target, b_target)``: label 1 when B continues A, 0 when B is a random
      span of the same row; or None when the row has no room (the caller stops writing).
    """
    data_len = data.shape[0]
    if begin_idx + tot_len >= data_len:
        return None
    cut_points, end_idx = _cut_points(sent_ids, begin_idx, tot_len)

    a_begin = begin_idx
    if not cut_points or py_rng.random() < 0.5:
        label = 0
        a_end = py_rng.choice(cut_points) if cut_points else end_idx
        b_len = max(1, tot_len - (a_end - a_begin))
        b_begin = py_rng.randint(0, data_len - 1 - b_len)  # data_len - 1: room for the target
        b_end = b_begin + b_len
        # the original steps b_begin back to its sentence's start and b_end on to the next
        # sentence's (not past data_len - 1), one token at a time
        b_begin = _last_change_at_or_before(sent_ids, b_begin)
        b_end = _first_change_at_or_after(sent_ids, b_end, data_len - 1)
    else:
        label = 1
        a_end = py_rng.choice(cut_points)
        b_begin, b_end = a_end, end_idx

    a_len, b_len = _trimmed_lengths(a_end - a_begin, b_end - b_begin, tot_len)
    a_end, b_end = a_begin + a_len, b_begin + b_len
    if a_end >= data_len or b_end >= data_len:
        return None
    return (data[a_begin:a_end], data[b_begin:b_end], label, data[a_begin + 1:a_end + 1],
            data[b_begin:b_end + 1])


# bert_tf: the original's token-at-a-time loops were quadratic in a sentence's length (one
# 40,000-token line ran for minutes); these find the same indices with numpy.
_SCAN_WINDOW = 4096


def _changes(sent_ids: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The positions p in [start, stop) (start >= 1) where sent_ids[p] != sent_ids[p - 1]."""
    return np.flatnonzero(sent_ids[start:stop] != sent_ids[start - 1:stop - 1]) + start


def _cut_points(sent_ids: np.ndarray, begin_idx: int, tot_len: int) -> Tuple[List[int], int]:
    """``(cut_points, end_idx)`` of the original's scan: every sentence change after
    ``begin_idx`` closer than ``tot_len``, and the first one not closer (or the row's end)."""
    cuts, start, window = [], begin_idx + 1, _SCAN_WINDOW
    while start < len(sent_ids):
        stop = min(len(sent_ids), start + window)
        found = _changes(sent_ids, start, stop)
        far = found - begin_idx >= tot_len
        if far.any():
            return cuts + found[~far].tolist(), int(found[far][0])
        cuts += found.tolist()
        start, window = stop, 2 * window
    return cuts, len(sent_ids)


def _last_change_at_or_before(sent_ids: np.ndarray, pos: int) -> int:
    """The start of the sentence holding ``pos``: the largest change position <= pos, or 0."""
    stop, window = pos + 1, _SCAN_WINDOW
    while stop > 1:
        start = max(1, stop - window)
        found = _changes(sent_ids, start, stop)
        if found.size:
            return int(found[-1])
        stop, window = start, 2 * window
    return 0


def _first_change_at_or_after(sent_ids: np.ndarray, pos: int, limit: int) -> int:
    """The smallest change position >= ``pos``, at most ``limit`` (``pos`` when beyond it)."""
    start, window = max(pos, 1), _SCAN_WINDOW
    if pos >= limit:
        return pos
    while start < limit:
        stop = min(limit, start + window)
        found = _changes(sent_ids, start, stop)
        if found.size:
            return int(found[0])
        start, window = stop, 2 * window
    return limit


def _trimmed_lengths(a_len: int, b_len: int, tot_len: int) -> Tuple[int, int]:
    """The original's trim, one token at a time from the longer segment (B on a tie), until
    ``a_len + b_len <= tot_len``, computed at once."""
    excess = a_len + b_len - tot_len
    if excess <= 0:
        return a_len, b_len
    step = min(excess, abs(a_len - b_len))  # the longer one down to the shorter
    if a_len > b_len:
        a_len -= step
    else:
        b_len -= step
    excess -= step
    return a_len - excess // 2, b_len - (excess + 1) // 2  # then B, A, B, ... in turn


def start_piece_table(sp_model) -> np.ndarray:
    """bool ``[vocab size]``: :func:`is_start_piece` of every id (computed once, so masking
    looks positions up instead of calling ``IdToPiece`` for each)."""
    return np.array([is_start_piece(sp_model.IdToPiece(i))
                     for i in range(sp_model.GetPieceSize())], dtype=bool)


def sample_mask(starts: Sequence[bool], np_rng: np.random.RandomState, mask_alpha: int,
                mask_beta: int, reverse: bool = False,
                goal_num_predict: Optional[int] = None) -> np.ndarray:
    """Which positions to predict: n-gram spans, then single positions (original
    ``_sample_mask``, spec 6.5).

    Args:
      starts: whether the piece at each position starts a word (:func:`is_start_piece`),
        length L.
      np_rng: numpy's random state (``choice``, ``randint``), used in the original's order.
      mask_alpha, mask_beta: about ``mask_beta`` of every ``mask_alpha`` tokens are chosen.
      reverse: sample on the flipped sequence (backward rows) and flip the mask back.
      goal_num_predict: exact number of positions to mark (None: spans only).

    Returns:
      bool ``[L]``.
    """
    seg_len = len(starts)
    if reverse:
        starts = starts[::-1]
    mask = np.zeros(seg_len, dtype=bool)
    ngrams = np.arange(1, MAX_GRAM + 1, dtype=np.int64)
    pvals = 1. / np.arange(1, MAX_GRAM + 1)
    pvals /= pvals.sum(keepdims=True)
    num_predict = cur_len = 0
    while cur_len < seg_len:
        if goal_num_predict is not None and num_predict >= goal_num_predict:
            break
        n = np_rng.choice(ngrams, p=pvals)
        if goal_num_predict is not None:
            n = min(n, goal_num_predict - num_predict)
        ctx_size = (n * mask_alpha) // mask_beta
        l_ctx = np_rng.choice(ctx_size)
        r_ctx = ctx_size - l_ctx
        beg = cur_len + l_ctx
        while beg < seg_len and not starts[beg]:
            beg += 1
        if beg >= seg_len:
            break
        # The original tests the piece at `beg` (always a start piece) instead of `end`, so the
        # span is exactly n pieces; one that would reach the end stops the span sampling.
        end = beg + n
        if end >= seg_len:
            break
        mask[beg:end] = True
        num_predict += end - beg
        cur_len = end + r_ctx
    while goal_num_predict is not None and num_predict < goal_num_predict:
        i = np_rng.randint(seg_len)
        if not mask[i]:
            mask[i] = True
            num_predict += 1
    return mask[::-1].copy() if reverse else mask


def iter_batches(rows: np.ndarray, row_sent_ids: np.ndarray, start_table: np.ndarray,
                 seq_len: int, reuse_len: int, num_predict: Optional[int], bi_data: bool,
                 num_core: int, mask_alpha: int, mask_beta: int, py_rng, np_rng
                 ) -> Iterator[List[dict]]:
    """Yields the batches of ``create_tfrecords`` (spec 6.5): lists of ``bsz_per_host`` dicts
    ``{"input", "is_masked", "target", "seg_id": int [seq_len], "label": [int]}`` in the
    original's feature order. Stops at the first row without room for A and B.

    Args:
      rows, row_sent_ids: ``[bsz_per_host, T]`` from :func:`stream_rows`.
      start_table: :func:`start_piece_table` of the SentencePiece model.
    """
    bsz_per_host = rows.shape[0]
    bsz_per_core = bsz_per_host // num_core
    tail = np.array([SEP_ID], dtype=np.int64), np.array([CLS_ID], dtype=np.int64)
    sep, cls = tail
    if num_predict is None:
        num_predict_0 = num_predict_1 = None
    else:
        num_predict_1 = num_predict // 2
        num_predict_0 = num_predict - num_predict_1
    i = 0
    while i + seq_len <= rows.shape[1]:
        batch = []
        for idx in range(bsz_per_host):
            inp = rows[idx, i:i + reuse_len]
            tgt = rows[idx, i + 1:i + reuse_len + 1]
            split = split_a_and_b(rows[idx], row_sent_ids[idx], begin_idx=i + reuse_len,
                                  tot_len=seq_len - reuse_len - 3, py_rng=py_rng)
            if split is None:
                return
            a_data, b_data, label, a_target, b_target = split
            reverse = bi_data and (idx // (bsz_per_core // 2)) % 2 == 1
            rest = np.concatenate([a_data, sep, b_data, sep, cls])
            mask_0 = sample_mask(start_table[inp], np_rng, mask_alpha,
                                 mask_beta, reverse=reverse, goal_num_predict=num_predict_0)
            mask_1 = sample_mask(start_table[rest], np_rng, mask_alpha,
                                 mask_beta, reverse=reverse, goal_num_predict=num_predict_1)
            batch.append({
                "input": np.concatenate([inp, rest]),
                "is_masked": np.concatenate([mask_0, mask_1]).astype(np.int64),
                "target": np.concatenate([tgt, a_target, b_target, cls, cls]),
                "seg_id": ([0] * (reuse_len + a_data.shape[0]) + [0] + [1] * b_data.shape[0]
                           + [1] + [2]),
                "label": [label],
            })
        yield batch
        i += reuse_len


def corpus_info(args, num_core: int) -> dict:
    """``corpus_info.json`` of task 0 (spec 6.3): ``vocab_size`` is always 32000, as the
    original hard-codes it."""
    return {"vocab_size": VOCAB_SIZE, "bsz_per_host": args.bsz_per_host,
            "num_core_per_host": num_core, "seq_len": args.seq_len, "reuse_len": args.reuse_len,
            "uncased": args.uncased, "bi_data": args.bi_data, "mask_alpha": args.mask_alpha,
            "mask_beta": args.mask_beta, "num_predict": args.num_predict,
            "use_eod": args.use_eod, "sp_path": args.sp_path, "input_glob": args.input_glob}


def record_names(args, pass_id: int) -> Tuple[str, str]:
    """``(tfrecords file name, record_info file name)`` of this split/task/pass (spec 6.3)."""
    common = dict(bsz_per_host=args.bsz_per_host, seq_len=args.seq_len, bi_data=args.bi_data,
                  mask_alpha=args.mask_alpha, mask_beta=args.mask_beta,
                  reuse_len=args.reuse_len, uncased=args.uncased,
                  fixed_num_predict=args.num_predict)
    base = f"{args.split}-{args.task}-{pass_id}"
    return (format_filename(base, suffix="tfrecords", **common),
            format_filename(f"record_info-{base}", suffix="json", **common))


def _output_names(args) -> List[Tuple[str, Tuple[str, ...], Tuple[str, ...]]]:
    """``(folder, files, folders)`` the run writes: ``corpus_info.json`` and ``tfrecords/`` in
    ``--save_dir``, each pass's records and record_info JSON in ``tfrecords/``."""
    passes = range(args.pass_id, args.pass_id + getattr(args, "num_passes", 1))
    records = tuple(name for pass_id in passes for name in record_names(args, pass_id))
    return [(args.save_dir, ("corpus_info.json",), ("tfrecords",)),
            (os.path.join(args.save_dir, "tfrecords"), records, ())]


def task_files(input_glob: str, task: int, num_task: int) -> List[str]:
    """``sorted(glob(input_glob))[task::num_task]`` (spec 6.3).

    Raises:
      FlagError: the glob matches no file (the original exits silently with no records).
    """
    paths = sorted(tf.io.gfile.glob(input_glob))
    if not paths:
        raise FlagError(f"--input_glob={input_glob} matches no file")
    return paths[task::num_task]


def write_pass(shards, args, num_core: int, sp_model, pass_id: int, py_rng) -> dict:
    """Writes one pass's TFRecord file and its ``record_info`` JSON; returns the record info.

    numpy is seeded ``100 * task + pass_id`` as the original (the file shuffle and the masks);
    ``py_rng`` (Python ``random``) carries on from its state.

    Raises:
      InputDataError: the corpus is too small for one batch of ``bsz_per_host`` rows.
    """
    np_rng = np.random.RandomState(100 * args.task + pass_id)
    ids, sent_ids = concat_shards(shards, np_rng)
    rows, row_sent_ids = stream_rows(ids, sent_ids, args.bsz_per_host, num_core, args.bi_data)
    tfrecord_dir = os.path.join(args.save_dir, "tfrecords")
    data_name, info_name = record_names(args, pass_id)
    data_path = os.path.join(tfrecord_dir, data_name)
    num_batch = 0
    # the records and their record_info JSON appear together or not at all (a full disk)
    with RecordFilesTogether([data_path]) as together:
        writer = together.writers[0]
        for batch in iter_batches(rows, row_sent_ids, start_piece_table(sp_model), args.seq_len,
                                  args.reuse_len, args.num_predict, args.bi_data, num_core,
                                  args.mask_alpha, args.mask_beta, py_rng, np_rng):
            for feature in batch:
                writer.write(make_example(feature).SerializeToString())
            num_batch += 1
        if num_batch == 0:
            raise InputDataError(
                f"{args.input_glob}: {len(ids)} tokens give no batch of {args.bsz_per_host} rows "
                f"of seq_len {args.seq_len} (each row needs more than seq_len tokens): give more "
                "text or lower --bsz_per_host / --seq_len")
        info = {"filenames": [data_path], "num_batch": num_batch}
        together.add_text(os.path.join(tfrecord_dir, info_name), json.dumps(info))
    return info


def check_mask_flags(args) -> None:
    """Refuses ``--mask_alpha`` / ``--mask_beta`` below 1, and ``--mask_beta`` above
    ``--mask_alpha``: the span context ``n * alpha // beta`` of a 1-piece span is then empty
    (the original fails in numpy's ``choice``) or a division by zero.

    Raises:
      FlagError: names the flag.
    """
    for name in ("mask_alpha", "mask_beta"):
        if getattr(args, name) < 1:
            raise FlagError(f"--{name}={getattr(args, name)}: must be at least 1 (about "
                            "mask_beta of every mask_alpha tokens are masked)")
    if args.mask_beta > args.mask_alpha:
        raise FlagError(f"--mask_beta={args.mask_beta}: must not exceed --mask_alpha="
                        f"{args.mask_alpha} (about mask_beta of every mask_alpha tokens are "
                        "masked; a 1-token span would get an empty context)")


def check_args(args) -> int:
    """The original's checks of ``create_data`` as one-line errors, plus the ones it lacked;
    returns the number of cores per host used (forced to 1 without ``use_tpu``, as the
    original).

    Raises:
      FlagError: ``bsz_per_host`` not a multiple of ``num_core_per_host``; ``mask_alpha`` or
        ``mask_beta`` below 1 (:func:`check_mask_flags`); ``seq_len`` below 5; ``reuse_len`` not
        below ``seq_len - 3`` (the original asserts); a ``num_predict`` the masking cannot give
        (more than ``reuse_len`` / ``seq_len - reuse_len`` per half: the original loops
        forever); ``pass_id``/``num_passes``/``task`` out of range.
    """
    if args.bsz_per_host <= 0 or args.num_core_per_host <= 0:
        raise FlagError("--bsz_per_host and --num_core_per_host must be positive")
    check_mask_flags(args)
    if args.bsz_per_host % args.num_core_per_host:
        raise FlagError(f"--bsz_per_host={args.bsz_per_host} must be a multiple of "
                        f"--num_core_per_host={args.num_core_per_host}")
    num_core = args.num_core_per_host if args.use_tpu else 1
    if args.seq_len < 5:  # the smallest that leaves room for --reuse_len=1 (1 < seq_len - 3)
        raise FlagError(f"--seq_len={args.seq_len} must be at least 5 (a --reuse_len of at least "
                        "1, below seq_len - 3: the rest holds <sep> <sep> <cls>)")
    if not 0 < args.reuse_len < args.seq_len - 3:
        raise FlagError(f"--reuse_len={args.reuse_len} must be in [1, seq_len - 3) = "
                        f"[1, {args.seq_len - 3}) (--seq_len={args.seq_len})")
    if args.num_predict is not None:
        half_1 = args.num_predict // 2
        half_0 = args.num_predict - half_1
        rest = args.seq_len - args.reuse_len
        if args.num_predict <= 0 or half_0 > args.reuse_len or half_1 > rest:
            raise FlagError(
                f"--num_predict={args.num_predict} cannot be masked: {half_0} positions go in the "
                f"reuse part ({args.reuse_len} tokens) and {half_1} in the rest "
                f"({args.seq_len - args.reuse_len} tokens)")
    if args.bi_data and args.bsz_per_host % (2 * num_core):
        raise FlagError(f"--bi_data=True needs --bsz_per_host ({args.bsz_per_host}) to be a "
                        f"multiple of 2 * num_core_per_host ({2 * num_core})")
    if not 0 <= args.task < args.num_task:
        raise FlagError(f"--task={args.task} must be in [0, --num_task={args.num_task})")
    if args.pass_id < 0 or getattr(args, "num_passes", 1) < 1:
        raise FlagError("--pass_id must be >= 0 and --num_passes >= 1")
    return num_core


def check_special_symbols(sp_model, sp_path: str) -> None:
    """Raises FlagError unless ``<cls> <sep> <eod>`` have the ids the original hard-codes."""
    for symbol, expected in (("<cls>", CLS_ID), ("<sep>", SEP_ID), ("<eod>", EOD_ID)):
        if sp_model.PieceToId(symbol) != expected or sp_model.IdToPiece(expected) != symbol:
            raise FlagError(f"--sp_path={sp_path}: {symbol} is not id {expected} as XLNet's "
                            "data_utils.py hard-codes it (spec 5.3); not an XLNet SentencePiece "
                            "model")


def create_data(args, sp_model, py_rng) -> List[dict]:
    """The original ``create_data`` (spec 6): corpus_info.json (task 0), then for each pass
    ``<save_dir>/tfrecords/<split>-<task>-<pass>....tfrecords`` and its record_info JSON.

    Args:
      args: the data_utils flags (``bsz_per_host, num_core_per_host, seq_len, reuse_len,
        uncased, bi_data, mask_alpha, mask_beta, use_eod, from_raw_text, num_predict,
        input_glob, sp_path, save_dir, split, pass_id, num_task, task, use_tpu``), and
        ``num_passes`` (bert_tf: passes ``pass_id .. pass_id + num_passes - 1``) and
        ``num_workers`` (bert_tf: encoding in that many processes; the same records).
      sp_model: the loaded SentencePiece model of ``sp_path``.
      py_rng: Python ``random`` (the module, seeded by the caller, or a ``random.Random``).

    Returns:
      the record_info dict of each pass.

    Raises:
      FlagError, InputDataError: see :func:`check_args`, :func:`task_files`,
      :func:`write_pass`; files are written atomically, so a failure leaves no partial file.
    """
    num_core = check_args(args)
    check_special_symbols(sp_model, args.sp_path)
    outputs = _output_names(args)
    for folder, files, folders in outputs:  # before the corpus is read
        check_output_names(folder, "save_dir", files, folders)
    paths = task_files(args.input_glob, args.task, args.num_task)
    shards = []
    pool = worker_pool(getattr(args, "num_workers", 1), args.sp_path)
    try:
        for path in paths:
            # invalid UTF-8 dropped with a warning (the original's "ignore"); an unreadable
            # file is one line naming it
            ids, sent_ids, line_cnt = encode_corpus_file(
                read_utf8_lines(path), sp_model, args.uncased, use_eod=args.use_eod,
                from_raw_text=args.from_raw_text, path=path, pool=pool)
            if line_cnt and len(ids):
                shards.append((ids, sent_ids))
    finally:
        if pool is not None:
            pool.terminate()
    if not shards:
        raise InputDataError(f"--input_glob={args.input_glob}: the files of task {args.task} "
                             "hold no text")
    for folder, files, folders in outputs:
        make_output_dir(folder, "save_dir", files, folders)
    infos = [write_pass(shards, args, num_core, sp_model, pass_id, py_rng)
             for pass_id in range(args.pass_id, args.pass_id + getattr(args, "num_passes", 1))]
    if args.task == 0:  # written last, so a failed run leaves no corpus_info.json behind
        atomic_write_text(os.path.join(args.save_dir, "corpus_info.json"),
                          json.dumps(corpus_info(args, num_core)))
    return infos
