"""Building blocks shared by the in-graph tokenizers: exact Unicode classes and exact mappings.

The original tokenizers (BERT ``tokenization.py``, XLNet ``prepro_utils.py``) decide character
classes with Python's ``unicodedata`` and transform text with ``str.lower`` and
``unicodedata.normalize``. TensorFlow's ops use other Unicode tables: RE2's ``\\p{..}`` classes,
ICU inside ``tf.strings.lower`` and ICU (another version) inside ``tf_text.normalize_utf8``. On
TF 2.21 / tensorflow-text 2.21 against Python 3.11 (Unicode 14.0) ``tf.strings.lower`` differs
from ``str.lower`` on 41 code points and NFD on 20 (characters added in Unicode 15/16, or letters
one ICU does not lower-case). This module removes every such difference:

* :func:`codepoint_class` turns a predicate over Python's ``unicodedata`` into an explicit RE2
  character class (``[\\x{41}-\\x{5a}...]``), so a regex op decides exactly what the original's
  Python code decides;
* :class:`ExactStringMap` applies a TF string op (lower-casing, normalization) and routes every
  code point on which the TF op and its Python counterpart disagree through a lookup table of the
  Python results. The disagreeing code points are found once per process by running both on
  every code point (and on every code point after a combining mark, which catches differing
  canonical combining classes), so a newer or older TF/ICU is handled the same way.

Only tensorflow, tensorflow_text and the standard library are used (bottom level).
"""

import functools
import unicodedata
from typing import Callable, Iterable, List, Sequence, Tuple

import tensorflow as tf

__all__ = ["codepoint_class", "codepoint_ranges", "all_codepoints", "python_whitespace",
           "ExactStringMap", "truncated_pair_lengths", "kept_pair"]

# Code points that are probed and classified: planes 0-3 and 14 without the surrogates (never
# in UTF-8 text). Planes 4-13 have no assigned character in any Unicode version to date (16.0)
# and planes 15-16 are private use (category Co, no case, decomposition or class of interest).
_PLANES = ((0x0, 0x3FFFF), (0xE0000, 0xEFFFF))


@functools.lru_cache(maxsize=None)
def all_codepoints() -> Tuple[int, ...]:
    """Code points of planes 0-3 and 14 except the surrogates (python ints, ascending)."""
    return tuple(cp for low, high in _PLANES for cp in range(low, high + 1)
                 if not 0xD800 <= cp <= 0xDFFF)


def codepoint_ranges(codepoints: Iterable[int]) -> List[Tuple[int, int]]:
    """Sorted, merged ``(first, last)`` inclusive ranges of a set of code points."""
    ranges: List[Tuple[int, int]] = []
    for cp in sorted(set(codepoints)):
        if ranges and cp == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return ranges


def codepoint_class(codepoints: Iterable[int]) -> str:
    """RE2 character class matching exactly the given code points, e.g. ``[\\x{20}\\x{a0}]``.

    Raises:
      ValueError: the set is empty (RE2 has no empty class).
    """
    ranges = codepoint_ranges(codepoints)
    if not ranges:
        raise ValueError("codepoint_class: empty set of code points")
    parts = []
    for first, last in ranges:
        if first == last:
            parts.append(f"\\x{{{first:x}}}")
        else:
            parts.append(f"\\x{{{first:x}}}-\\x{{{last:x}}}")
    return "[" + "".join(parts) + "]"


@functools.lru_cache(maxsize=None)
def python_whitespace() -> Tuple[int, ...]:
    """Code points Python's ``str.split()`` splits on (``str.isspace``), ascending."""
    return tuple(cp for cp in range(0x3100) if chr(cp).isspace())


@tf.autograph.experimental.do_not_convert
def truncated_pair_lengths(len_a: tf.Tensor, len_b: tf.Tensor, max_length: int):
    """Lengths that the original ``_truncate_seq_pair`` leaves, in closed form.

    ``_truncate_seq_pair`` pops from the longer list (B on ties) until ``len_a + len_b <=
    max_length``; the result is ``a = min(len_a, max(max_length - len_b, ceil(max_length/2)))``,
    ``b = min(len_b, max(max_length - len_a, floor(max_length/2)))``.

    Args:
      len_a, len_b: int ``[batch]`` lengths before truncation.
      max_length: python int, the budget (``max_seq_length - 3`` for BERT and XLNet pairs).

    Returns:
      ``(a, b)``, int ``[batch]`` each.
    """
    half_up = (max_length + 1) // 2
    half_down = max_length // 2
    a = tf.minimum(len_a, tf.maximum(max_length - len_b, half_up))
    b = tf.minimum(len_b, tf.maximum(max_length - len_a, half_down))
    return a, b


def kept_pair(ids_a: tf.RaggedTensor, ids_b, max_seq_length: int):
    """How much of A and B a classifier row keeps, and both as dense rows.

    A row whose B has no ids (or ``ids_b`` None) is a single sentence cut to ``max_seq_length -
    2``; otherwise the pair is cut by ``_truncate_seq_pair`` to ``max_seq_length - 3``
    (:func:`truncated_pair_lengths`). The same rule in BERT's and XLNet's
    ``convert_single_example`` (``run_classifier.py`` / ``classifier_utils.py``); the two
    layouts around the kept ids differ (``in_graph_wordpiece.pack_bert_inputs``,
    ``in_graph_sentencepiece.pack_xlnet_inputs``).

    Args:
      ids_a, ids_b: int ragged ``[batch, (ids)]``; ``ids_b`` may be None.
      max_seq_length: python int, the row length.

    Returns:
      ``(keep_a, keep_b, dense_a, dense_b)``: int32 ``[batch, 1]`` kept lengths, and int32
      ``[batch, max_seq_length]`` A and B cut or zero-padded to the row length.
    """
    ids_a = tf.cast(ids_a, tf.int32)
    len_a = tf.cast(ids_a.row_lengths(), tf.int32)
    if ids_b is None:
        ids_b = ids_a[:, :0]
    ids_b = tf.cast(ids_b, tf.int32)
    len_b = tf.cast(ids_b.row_lengths(), tf.int32)
    pair_a, pair_b = truncated_pair_lengths(len_a, len_b, max_seq_length - 3)
    has_b = len_b > 0
    keep_a = tf.where(has_b, pair_a, tf.minimum(len_a, max_seq_length - 2))[:, None]
    keep_b = tf.where(has_b, pair_b, 0)[:, None]
    dense_a = ids_a.to_tensor(default_value=0, shape=[None, max_seq_length])
    dense_b = ids_b.to_tensor(default_value=0, shape=[None, max_seq_length])
    return keep_a, keep_b, dense_a, dense_b


def _utf8(strings: Sequence[str]) -> List[bytes]:
    return [s.encode("utf-8") for s in strings]


class ExactStringMap(tf.Module):
    """A TF string op made equal to a Python string function, code point by code point.

    ``tf_fn`` maps a 1-D ``tf.string`` tensor to one of the same shape (e.g. ICU lower-casing
    then NFD); ``py_fn`` is the function of the original code it stands for (e.g.
    ``lambda s: unicodedata.normalize("NFD", s.lower())``). Both must work character by
    character apart from context rules both implement (final sigma, canonical reordering).

    At construction every probed code point ``c`` is mapped by both, alone and after
    ``probe_prefix`` (a base letter and a combining mark, so that a differing combining class
    shows as a different order); the code points where any result differs are "risky". At call
    time a string without risky code points goes through ``tf_fn`` alone; one with risky code
    points is split into runs around them, ``tf_fn`` maps the runs and a lookup table of
    ``py_fn(c)`` maps each risky code point.

    Args:
      name: a name for the probe cache (one probe per name and process).
      tf_fn: the TF op, ``tf.string [n] -> tf.string [n]``.
      py_fn: the Python function, ``str -> str``.
      probe_prefix: text put before each probed code point for the second probe.

    Attributes:
      risky: the sorted tuple of risky code points (python ints).
    """

    def __init__(self, name: str, tf_fn: Callable[[tf.Tensor], tf.Tensor],
                 py_fn: Callable[[str], str], probe_prefix: str = "a\u0345"):
        super().__init__(name=name)
        self._tf_fn = tf_fn
        self._table = None
        # Eagerly, even when built inside a graph or tf.function: the probe runs ops on
        # constants and the table may be shared by layers of several graphs.
        with tf.init_scope():
            if not tf.executing_eagerly():
                raise RuntimeError(f"{name}: build the in-graph tokenizer layers in TF2 (eager) "
                                   "code, not inside a tf.compat.v1 graph: their start-up "
                                   "compares TF's and Python's Unicode handling eagerly")
            self.risky = _probe_risky(name, tf_fn, py_fn, probe_prefix)
            if self.risky:
                chars = [chr(cp) for cp in self.risky]
                self._risky_class = codepoint_class(self.risky)
                self._table = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer(
                        tf.constant(_utf8(chars)),
                        tf.constant(_utf8([py_fn(c) for c in chars]))),
                    default_value="")

    @tf.autograph.experimental.do_not_convert
    def __call__(self, strings: tf.Tensor) -> tf.Tensor:
        """Maps ``strings`` (``tf.string [n]``, valid UTF-8) as ``py_fn`` would; same shape."""
        mapped = self._tf_fn(strings)
        if self._table is None:
            return mapped
        import tensorflow_text as tf_text

        has_risky = tf.strings.regex_full_match(strings, "(?s).*" + self._risky_class + ".*")

        def fix_risky_rows():
            rows = tf.where(has_risky)  # [m, 1] int64
            # tf_text.regex_split stops at a NUL character ("a\x00b" -> ["a"]): split each
            # row at NUL first (tf.strings.split keeps the bytes after it), map the parts,
            # and put the NULs back (every map here sends NUL to itself, as py_fn does).
            parts = tf.strings.split(tf.gather_nd(strings, rows), sep="\x00")  # [m, (parts)]
            runs = tf_text.regex_split(parts.flat_values, self._risky_class,
                                       keep_delim_regex_pattern=self._risky_class)
            run_values = runs.flat_values
            is_risky_char = tf.strings.regex_full_match(run_values, self._risky_class)
            run_mapped = tf.where(is_risky_char, self._table.lookup(run_values),
                                  self._tf_fn(run_values))
            fixed_parts = tf.strings.reduce_join(runs.with_flat_values(run_mapped), axis=1)
            return tf.tensor_scatter_nd_update(mapped, rows, _join_at_nul(parts, fixed_parts))

        return tf.cond(tf.reduce_any(has_risky), fix_risky_rows, lambda: mapped)


def _join_at_nul(parts: tf.RaggedTensor, values: tf.Tensor) -> tf.Tensor:
    """Rows of ``parts`` (ragged ``tf.string [m, (parts)]``) with their flat ``values``
    replaced, joined with one NUL between neighbours -> ``tf.string [m]`` (reduce_join's
    ``separator`` cannot be a NUL: it is read as a C string)."""
    lengths = parts.row_lengths()
    position = tf.ragged.range(lengths).flat_values
    last = tf.gather(lengths - 1, parts.value_rowids())
    with_nul = tf.strings.join([values, tf.where(position < last, "\x00", "")])
    return tf.strings.reduce_join(parts.with_flat_values(with_nul), axis=1)


_PROBES = {}
_PROBE_BLOCK = 256


def _probe_risky(name, tf_fn, py_fn, prefix) -> Tuple[int, ...]:
    """Code points where ``tf_fn`` and ``py_fn`` differ, alone or after ``prefix``.

    Blocks of code points are first compared as one newline-joined string each; only the code
    points of a block that differs are compared one by one.
    """
    if name in _PROBES:
        return _PROBES[name]
    cps = all_codepoints()
    risky = set()
    for pre in ("", prefix):
        blocks = [cps[i:i + _PROBE_BLOCK] for i in range(0, len(cps), _PROBE_BLOCK)]
        texts = ["\n".join(pre + chr(cp) for cp in block) for block in blocks]
        got = tf_fn(tf.constant(_utf8(texts))).numpy()
        suspects = [cp for block, text, out in zip(blocks, texts, got)
                    if out.decode("utf-8", "replace") != py_fn(text) for cp in block]
        if not suspects:
            continue
        singles = [pre + chr(cp) for cp in suspects]
        got = tf_fn(tf.constant(_utf8(singles))).numpy()
        risky.update(cp for cp, text, out in zip(suspects, singles, got)
                     if out.decode("utf-8", "replace") != py_fn(text))
    _PROBES[name] = tuple(sorted(risky))
    return _PROBES[name]
