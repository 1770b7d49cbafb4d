"""Single sentences and sentence pairs -> BERT inputs (`[CLS] A [SEP] B [SEP]`).

Mirrors the fine-tuning scripts' layout (`convert_single_example` in the original
`run_classifier.py` and `extract_features.py`; spec `bert.md` 8.4, 10): the pair is truncated
by popping from the back of the longer side (ties pop from B) to ``max_seq_length - 3``, a
single sentence is cut to ``max_seq_length - 2``; segment ids are 0 for `[CLS] A [SEP]` and 1
for `B [SEP]`; padding uses the literal id 0 with mask 0.
"""

from typing import List, NamedTuple, Optional, Sequence


class BertInputs(NamedTuple):
    """One example's model inputs.

    Attributes:
      tokens: the unpadded token strings, `[CLS]` and `[SEP]` included.
      input_ids, input_mask, segment_ids: int lists of length ``max_seq_length`` (or of
        ``len(tokens)`` when built with ``pad=False``).
    """

    tokens: List[str]
    input_ids: List[int]
    input_mask: List[int]
    segment_ids: List[int]


def truncate_seq_pair(tokens_a: list, tokens_b: list, max_length: int) -> None:
    """Pops tokens in place from the longer list (B on ties) until the total fits.

    Source: original `_truncate_seq_pair` (`run_classifier.py`, `extract_features.py`).
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def build_bert_inputs(tokens_a: Sequence[str], tokens_b: Optional[Sequence[str]],
                      max_seq_length: int, tokenizer, pad: bool = True) -> BertInputs:
    """`[CLS] A [SEP] (B [SEP])` ids, mask and segments for one example.

    Args:
      tokens_a, tokens_b: WordPiece tokens (``tokens_b`` None for a single sentence); the
        inputs are not modified.
      max_seq_length: total length after truncation and padding.
      tokenizer: anything with ``convert_tokens_to_ids``.
      pad: pad to ``max_seq_length`` with id 0 (False keeps the real length, for batching by
        length).

    Raises:
      ValueError: ``max_seq_length`` leaves no room for the special tokens.
    """
    if max_seq_length < (3 if tokens_b is not None else 2):
        raise ValueError(f"max_seq_length {max_seq_length} leaves no room for [CLS]/[SEP]")
    tokens_a = list(tokens_a)
    if tokens_b:  # as the original: an empty B counts as a single sentence
        tokens_b = list(tokens_b)
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    elif len(tokens_a) > max_seq_length - 2:
        tokens_a = tokens_a[: max_seq_length - 2]
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + ["[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    input_mask = [1] * len(input_ids)
    if pad:
        padding = max_seq_length - len(input_ids)
        input_ids = input_ids + [0] * padding
        input_mask = input_mask + [0] * padding
        segment_ids = segment_ids + [0] * padding
    return BertInputs(tokens, input_ids, input_mask, segment_ids)


class TruncationCount:
    """Counts the examples :func:`build_bert_inputs` cuts to ``max_seq_length``, for one
    summary line (the original truncated silently; issue 15).

    ``add(tokens_a, tokens_b)`` before the cut; :meth:`summary` is "" when nothing was cut.
    ``specials``: the added tokens' names in the summary (XLNet: ``<sep>/<cls>``; the same
    count, 2 for one text, 3 for a pair).
    """

    def __init__(self, max_seq_length: int, specials: str = "[CLS]/[SEP]"):
        self.max_seq_length = max_seq_length
        self.specials = specials
        self.total = 0
        self.truncated = 0
        self.longest = 0

    def add(self, tokens_a: Sequence[str], tokens_b: Optional[Sequence[str]]) -> None:
        """Counts one example: its length with ``[CLS]``/``[SEP]`` before truncation."""
        length = len(tokens_a) + 2 + (len(tokens_b) + 1 if tokens_b else 0)
        self.total += 1
        if length > self.max_seq_length:
            self.truncated += 1
            self.longest = max(self.longest, length)

    def summary(self, what: str = "examples") -> str:
        """``3 of 40 examples were truncated to --max_seq_length=128 (the longest had 211
        tokens)``, or "" when none was."""
        if not self.truncated:
            return ""
        return (f"{self.truncated} of {self.total} {what} were truncated to --max_seq_length="
                f"{self.max_seq_length} (the longest had {self.longest} tokens with "
                f"{self.specials})")
