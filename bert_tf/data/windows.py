"""Long inputs as sliding windows (bert_tf, beyond the original; issue 13).

The original ``run_classifier.py`` and ``extract_features.py`` cut an input longer than
``max_seq_length`` (google-research/bert#27, #66). With ``--doc_stride`` they instead split it
into windows exactly as the original ``run_squad.py`` splits a paragraph (its ``doc_spans``
loop, :func:`bert_tf.data.squad.make_doc_spans`): each window holds up to ``window`` tokens,
the next one starts ``min(length, doc_stride)`` tokens later, the last one reaches the end.

The window size is what the family's layout leaves: ``max_seq_length - 2`` for one text
(BERT ``[CLS] A [SEP]``, XLNet ``A <sep> <cls>``), ``max_seq_length - 3 - len(shorter side)``
for a pair. A pair keeps its SHORTER side whole in every window and windows the longer one
(text_a on a tie), so the order and the segment ids of A and B stay the original's; the
shorter side is the one a window cannot do without (a question, a hypothesis), and keeping
it whole makes a pair that fits in one window give the very input the original gives. An
example that fits in one window gives one window equal to the original's (untruncated)
input; an empty text gives one empty window (the original's ``[CLS] [SEP]``).

Per example, the windows' outputs are pooled back (:func:`pool_window_logits`), and a token's
"own" window is the one where it has the most context (:func:`max_context_windows`, the
original ``_check_is_max_context`` rule, :func:`bert_tf.data.squad.check_is_max_context`).

Pure Python / numpy.
"""

from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from bert_tf.data.squad import DocSpan, check_is_max_context, make_doc_spans
from bert_tf.errors import FlagError, InputDataError

WINDOW_POOLINGS = ("mean", "max")
DEFAULT_WINDOW_POOLING = "mean"


def check_window_flags(doc_stride: Optional[int], window_pooling: Optional[str],
                       max_seq_length: int, num_special: int = 2) -> Optional[str]:
    """Checks ``--doc_stride`` / ``--window_pooling`` before anything is read or written.

    Args:
      doc_stride: the flag (None: not given, the original's truncation).
      window_pooling: the flag (None: not given; ``mean`` when windows are used).
      max_seq_length: the flag; ``max_seq_length - num_special`` is the largest window.
      num_special: special tokens of a one-text window (2 for BERT and XLNet).

    Returns:
      the window pooling to use (``"mean"`` / ``"max"``), or None without ``doc_stride``.

    Raises:
      FlagError: ``window_pooling`` without ``doc_stride``, another pooling, ``doc_stride <
        1`` (the original run_squad loop never ends), or ``doc_stride`` larger than the window
        (its pieces would follow each other with no overlap: not a sliding window).
    """
    if doc_stride is None:
        if window_pooling is not None:
            raise FlagError(f"--window_pooling={window_pooling} needs --doc_stride (without it "
                            "the input is truncated as the original: there are no windows to pool)")
        return None
    pooling = DEFAULT_WINDOW_POOLING if window_pooling is None else window_pooling
    if pooling not in WINDOW_POOLINGS:
        raise FlagError(f"--window_pooling={window_pooling}: expected one of "
                        f"{', '.join(WINDOW_POOLINGS)}")
    if doc_stride < 1:
        raise FlagError(f"--doc_stride={doc_stride}: must be at least 1")
    window = max_seq_length - num_special
    if doc_stride > window:
        raise FlagError(f"--doc_stride={doc_stride} is larger than the window of {window} tokens "
                        f"(--max_seq_length={max_seq_length} - {num_special} special tokens); "
                        f"pass --doc_stride <= {window}")
    return pooling


def window_spans(num_tokens: int, window: int, doc_stride: int) -> List[DocSpan]:
    """The windows over ``num_tokens`` tokens: :func:`bert_tf.data.squad.make_doc_spans`
    (the original run_squad rule), and one empty window for no token.

    Raises:
      ValueError: ``window < 1`` or ``doc_stride < 1`` (the loop would not end).
    """
    if window < 1 or doc_stride < 1:
        raise ValueError(f"window={window}, doc_stride={doc_stride}: both must be >= 1")
    if num_tokens == 0:
        return [DocSpan(start=0, length=0)]
    return make_doc_spans(num_tokens, window, doc_stride)


def max_context_windows(spans: Sequence[DocSpan], num_tokens: int) -> List[int]:
    """For each token position ``0..num_tokens-1``, the index of the window where it has the
    most context (original ``_check_is_max_context``: best ``min(left, right) + 0.01 *
    length``, the first window on ties).

    Returns:
      ``num_tokens`` window indexes (int).
    """
    owners = []
    first = 0  # windows start in increasing order: skip those that end before the position
    for position in range(num_tokens):
        while spans[first].start + spans[first].length <= position:
            first += 1
        index = first
        while not check_is_max_context(spans, index, position):
            index += 1
        owners.append(index)
    return owners


class ExampleWindows(NamedTuple):
    """The windows of one example.

    Attributes:
      pieces: per window, ``(tokens_a, tokens_b)`` of that window (``tokens_b`` None for
        one text), each short enough for the layout (no truncation needed).
      spans: the windows over the windowed side (``DocSpan(start, length)`` in its tokens).
      windowed: ``"a"`` or ``"b"``, the side the spans cut.
    """

    pieces: List[Tuple[list, Optional[list]]]
    spans: List[DocSpan]
    windowed: str


def split_into_windows(tokens_a: Sequence, tokens_b: Optional[Sequence], max_seq_length: int,
                       doc_stride: int, where: str = "example") -> ExampleWindows:
    """Cuts one example's tokens into windows for a 2 (one text) / 3 (pair) special-token
    layout (BERT ``[CLS] A [SEP] (B [SEP])``, XLNet ``A <sep> (B <sep>) <cls>``).

    An empty ``tokens_b`` counts as one text, as in the original ``convert_single_example``.

    Args:
      tokens_a, tokens_b: the tokens (WordPieces or SentencePiece pieces, or ids).
      max_seq_length, doc_stride: the flags (already checked by :func:`check_window_flags`).
      where: names the example in errors (``"dev.tsv example dev-3"``).

    Raises:
      InputDataError: a pair that needs more than one window and whose shorter side leaves
        fewer than ``doc_stride`` tokens per window for the longer one (names the example,
        both lengths and the largest stride that would do).
    """
    tokens_a = list(tokens_a)
    if not tokens_b:
        spans = window_spans(len(tokens_a), max_seq_length - 2, doc_stride)
        return ExampleWindows([(tokens_a[s.start:s.start + s.length], None) for s in spans],
                              spans, "a")
    tokens_b = list(tokens_b)
    windowed = "a" if len(tokens_a) >= len(tokens_b) else "b"
    long_side, short_side = (tokens_a, tokens_b) if windowed == "a" else (tokens_b, tokens_a)
    room = max_seq_length - 3 - len(short_side)
    if len(long_side) > room and room < doc_stride:
        raise InputDataError(
            f"{where}: text_{'b' if windowed == 'a' else 'a'} has {len(short_side)} tokens and is "
            f"kept whole in every window, leaving {max(room, 0)} tokens of text_{windowed} "
            f"({len(long_side)} tokens) per window of --max_seq_length={max_seq_length}: less "
            f"than --doc_stride={doc_stride}; use a larger --max_seq_length or "
            f"--doc_stride <= {max(room, 0)}" + (" (0: no stride fits)" if room < 1 else ""))
    spans = window_spans(len(long_side), room, doc_stride)
    pieces = []
    for s in spans:
        part = long_side[s.start:s.start + s.length]
        pieces.append((part, short_side) if windowed == "a" else (short_side, part))
    return ExampleWindows(pieces, spans, windowed)


def pool_window_logits(logits: np.ndarray, example_index: np.ndarray, num_examples: int,
                       pooling: str) -> np.ndarray:
    """One row per example from the rows of its windows.

    Args:
      logits: float ``[num_windows, num_labels]``, every window's logits (padding windows
        included).
      example_index: int ``[num_windows]``, the example of each window; negative for TPU
        padding windows (ignored).
      num_examples: N, the number of real examples (indexes ``0..N-1``).
      pooling: ``mean`` or ``max`` over each example's windows.

    Returns:
      float32 ``[N, num_labels]``.

    Raises:
      ValueError: an example with no window, a window of an example beyond N, or another
        pooling.
    """
    logits = np.asarray(logits, np.float32)
    example_index = np.asarray(example_index).reshape(-1)
    if pooling not in WINDOW_POOLINGS:
        raise ValueError(f"pooling={pooling!r}: expected one of {WINDOW_POOLINGS}")
    real = example_index >= 0
    logits, example_index = logits[real], example_index[real]
    counts = np.bincount(example_index, minlength=num_examples)
    if len(counts) > num_examples:
        raise ValueError(f"a window of example {len(counts) - 1}: only {num_examples} examples")
    missing = np.flatnonzero(counts == 0)
    if len(missing):
        raise ValueError(f"example {int(missing[0])} has no window among the predictions")
    out = np.zeros((num_examples, logits.shape[1]), np.float64)
    if pooling == "mean":
        np.add.at(out, example_index, logits.astype(np.float64))
        out /= counts[:, None]
    else:
        out[:] = -np.inf
        np.maximum.at(out, example_index, logits.astype(np.float64))
    return out.astype(np.float32)


def first_window_rows(example_index: np.ndarray, num_examples: int) -> np.ndarray:
    """The row of each example's first window (for its label): int ``[num_examples]``.

    Args:
      example_index: int ``[num_windows]`` (negative: padding windows).
    """
    example_index = np.asarray(example_index).reshape(-1)
    rows = np.full(num_examples, -1, np.int64)
    for row in range(len(example_index) - 1, -1, -1):
        if 0 <= example_index[row] < num_examples:
            rows[example_index[row]] = row
    return rows
