"""A stand-in for a :class:`~bert_tf.tokenization.wordpiece.FullTokenizer` whose ``tokenize``
answers from tokens computed for many lines at once (:meth:`FullTokenizer.tokenize_batch`,
tf.text where exact), for the feature builders that tokenize line by line (the original
``convert_single_example`` of ``run_classifier.py``; issue 16).

The tokens are exactly ``tokenizer.tokenize(line)`` (see
:mod:`bert_tf.tokenization.batch_wordpiece`); every other attribute is the tokenizer's.
"""

import sys
from typing import Iterable, List, Sequence

from bert_tf.tokenization import wordpiece

# Lines from which building the tf.text tokenizer pays back (see wordpiece._MIN_BUILD_LINES).
MIN_LINES = wordpiece._MIN_BUILD_LINES
# Lines tokenized per batch (bounds the memory of the stored tokens).
CHUNK_LINES = 8192


def worth_batching(tokenizer, n_lines: int) -> bool:
    """True when ``tokenizer`` is a :class:`FullTokenizer` whose ``tokenize`` is not overridden,
    TensorFlow is already imported (the batch path never imports it for a script that does not
    use it), and ``n_lines`` >= :data:`MIN_LINES`."""
    return (isinstance(tokenizer, wordpiece.FullTokenizer)
            and type(tokenizer).tokenize is wordpiece.FullTokenizer.tokenize
            and type(tokenizer).tokenize_batch is wordpiece.FullTokenizer.tokenize_batch
            and "tensorflow" in sys.modules and n_lines >= MIN_LINES)


class PretokenizedTokenizer:
    """``tokenize(text)`` from tokens computed in one batch for ``texts``; else the tokenizer's.

    Args:
      tokenizer: a :class:`FullTokenizer` (see :func:`worth_batching`).
      texts: the lines (str) that will be tokenized; repeats are tokenized once.

    ``tokenize`` returns a new list each call (callers truncate it in place). Any other
    attribute (``vocab``, ``convert_tokens_to_ids``, ...) is the wrapped tokenizer's.
    """

    def __init__(self, tokenizer, texts: Iterable[str]):
        self._tokenizer = tokenizer
        unique = list(dict.fromkeys(t for t in texts if isinstance(t, str)))
        self._tokens = dict(zip(unique, tokenizer.tokenize_batch(unique, use_tf_text=True)))

    def tokenize(self, text) -> List[str]:
        """``tokenizer.tokenize(text)``: list of WordPiece token strings."""
        tokens = self._tokens.get(text) if isinstance(text, str) else None
        if tokens is None:
            return self._tokenizer.tokenize(text)
        return list(tokens)

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)


def chunked(tokenizer, items: Sequence, texts_of) -> Iterable:
    """Yields ``(index, item, tokenizer_for_item)`` over ``items`` in order.

    When :func:`worth_batching` for all the lines ``texts_of(item)`` gives (a list of str per
    item), the items go by chunks of about :data:`CHUNK_LINES` lines, each with a
    :class:`PretokenizedTokenizer` of its lines; else every item gets ``tokenizer`` itself.
    """
    lines = [texts_of(item) for item in items]
    if not worth_batching(tokenizer, sum(map(len, lines))):
        for index, item in enumerate(items):
            yield index, item, tokenizer
        return
    start = 0
    while start < len(items):
        end, n = start, 0
        while end < len(items) and (n < CHUNK_LINES or end == start):
            n += len(lines[end])
            end += 1
        proxy = PretokenizedTokenizer(tokenizer, [t for k in range(start, end) for t in lines[k]])
        for index in range(start, end):
            yield index, items[index], proxy
        start = end
