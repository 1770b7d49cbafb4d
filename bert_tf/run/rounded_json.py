"""JSON text of float arrays rounded to 6 decimals, vectorized, byte for byte as Python's.

The original `extract_features.py` writes every activation as ``round(float(x), 6)`` through
``json.dumps`` (spec `bert.md` 10). Done per float in Python that is most of a run's time;
:func:`rounded_json_rows` writes the same bytes with numpy integer arithmetic.

Why the fast path is exact (for float16 / bfloat16 / float32 input, converted to float64):

* ``round(x, 6)`` is the double nearest to the decimal ``k / 10**6``, where ``k`` is the exact
  value ``x * 10**6`` rounded half to even (CPython `double_round`: correctly rounded dtoa,
  then strtod). A float32 has a 24-bit significand and ``10**6 = 2**6 * 15625`` (14 bits), so
  ``x * 1e6`` in float64 is exact and ``np.rint`` (half to even) gives ``k`` exactly, ties
  (``x = m / 128``, m odd) included; ``k / 1e6`` is then that nearest double (IEEE division of
  two exact integers is correctly rounded).
* ``repr`` of that double is the shortest string that reads back to it. For ``|k| < 10**15``
  the decimal ``k / 10**6`` has at most 15 significant digits, and two different decimals of at
  most 15 digits never share a double (DBL_DIG = 15), so the shortest string is the digits of
  ``k`` with trailing zeros dropped; ``repr`` writes it in fixed notation when
  ``1e-4 <= |value| < 1e16``, i.e. ``|k| >= 100``: ``[-]int.frac`` with at least one
  fraction digit; ``0.0`` / ``-0.0`` when ``k == 0`` (the sign of ``x`` is kept, as ``round``
  keeps it).
* Everything else (``0 < |k| < 100``: scientific notation such as ``5e-06``; ``|x| >= 1e4``;
  inf / nan, which ``json.dumps`` writes ``Infinity`` / ``NaN``; float64 input whose product
  ``x * 1e6`` may be inexact near a tie) is formatted by Python's own
  ``json.dumps(round(float(x), 6))``, one value at a time.
"""

import json
from typing import List

import numpy as np

_DECIMALS = 6
_SCALE = 10.0 ** _DECIMALS
_INT_DIGITS = 4
_FIXED_MAX = 10.0 ** _INT_DIGITS  # |x| below this: integer part of at most 4 digits
_PLACEHOLDER = 1  # byte marking a value Python formats
# field of one value: sign, 4 integer digits, '.' + 6 fraction digits, ', '; zero bytes are
# dropped when the fields are joined
_FIELD = 1 + _INT_DIGITS + 1 + _DECIMALS + 2
_CHUNK_VALUES = 1 << 17  # values formatted at once (rounded_json_rows)
_WORD = 4  # bytes of one uint32 word of the output fields (rounded_json_rows)
_TABLES = {}


def _digit_table(count, strip_trailing, strip_leading):
    """``[10**count, count]`` uint8: the ``count`` decimal digits of each number, with its
    trailing (or leading) zeros as zero bytes; one digit always kept except for a trailing
    strip of 0 (all zero bytes)."""
    n = np.arange(10 ** count, dtype=np.int64)
    digits = (n[:, None] // 10 ** np.arange(count - 1, -1, -1)) % 10
    position = np.arange(count)[None, :]
    if strip_trailing:
        trailing = sum(((n % 10 ** p) == 0).astype(np.int64) for p in range(1, count + 1))
        keep = position < (count - trailing)[:, None]
    elif strip_leading:
        width = np.maximum(1, np.floor(np.log10(np.maximum(n, 1))).astype(np.int64) + 1)
        keep = position >= (count - width)[:, None]
    else:
        keep = np.ones_like(digits, bool)
    return np.where(keep, digits + ord("0"), 0).astype(np.uint8)


def _tables():
    """Digit tables (a few kB, built once): the integer part ``q < 10**4`` with its leading
    zeros dropped (``0`` kept); the fraction's first 3 digits in full and with trailing zeros
    dropped (at least one digit kept), its last 3 digits with trailing zeros dropped."""
    if not _TABLES:
        _TABLES["int"] = _digit_table(_INT_DIGITS, False, True)
        _TABLES["hi_full"] = _digit_table(3, False, False)
        hi_strip = _digit_table(3, True, False)
        hi_strip[0, 0] = ord("0")  # fraction 0: ".0"
        _TABLES["hi_strip"] = hi_strip
        _TABLES["lo_strip"] = _digit_table(3, True, False)
    return _TABLES


def _word_tables():
    """The digit tables as 4-byte words (native ``uint32``, built once from :func:`_tables`):
    ``sign`` [2] (``' '`` + ``'-'`` or nothing), ``int`` [10**4] (integer digits), ``hi``
    [2000] (``'.'`` + the first 3 fraction digits, in full for index ``< 1000``, without
    trailing zeros above), ``lo`` [1000] (the last 3 fraction digits without trailing zeros,
    then ``','``)."""
    if "words" not in _TABLES:
        tables = _tables()
        sign = np.zeros((2, _WORD), np.uint8)
        sign[:, 0] = ord(" ")
        sign[1, 1] = ord("-")
        hi = np.zeros((2000, _WORD), np.uint8)
        hi[:, 0] = ord(".")
        hi[:1000, 1:] = tables["hi_full"]
        hi[1000:, 1:] = tables["hi_strip"]
        lo = np.zeros((1000, _WORD), np.uint8)
        lo[:, :3] = tables["lo_strip"]
        lo[:, 3] = ord(",")
        as_words = lambda t: np.ascontiguousarray(t).view(np.uint32).reshape(-1)
        _TABLES["words"] = {"sign": as_words(sign), "int": as_words(tables["int"]),
                            "hi": as_words(hi), "lo": as_words(lo)}
    return _TABLES["words"]


def python_rounded_json(x: float) -> str:
    """``json.dumps(round(float(x), 6))``: the original's text of one value (the reference)."""
    return json.dumps(round(float(x), _DECIMALS))


def rounded_json_rows(values: np.ndarray) -> List[str]:
    """The JSON list bodies ``"v0, v1, ..."`` of each row, as ``json.dumps`` would write
    ``[round(float(v), 6) for v in row]`` without the brackets.

    Args:
      values: float ``[R, H]`` (float16, bfloat16 via float32, float32 or float64); H >= 1.

    Returns:
      R strings, row r equal to ``", ".join(python_rounded_json(v) for v in values[r])``.

    Raises:
      ValueError: ``values`` is not 2-D.

    Source: the original `extract_features.py` (``round(float(x), 6)`` + ``json.dumps``).
    """
    values = np.asarray(values)
    if values.ndim != 2:
        raise ValueError(f"values: expected a 2-D [rows, width] array, got shape {values.shape}")
    # A few rows at a time: the temporaries take ~150 bytes per value, so one 512-token line
    # of 4 BERT-Large layers (2M values) at once held ~0.3 GB beside the model (issue 24).
    step = max(1, _CHUNK_VALUES // max(1, values.shape[1]))
    if values.shape[0] <= step:
        return _rounded_rows(values)
    out = []
    for start in range(0, values.shape[0], step):
        out.extend(_rounded_rows(values[start:start + step]))
    return out


def _rounded_rows(values: np.ndarray) -> List[str]:
    """:func:`rounded_json_rows` of one chunk (a 2-D array)."""
    rows, width = values.shape
    if rows == 0:
        return []
    exact_product = values.dtype.itemsize <= 4
    x = values.astype(np.float64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = x * _SCALE
        k = np.rint(scaled)
        fallback = ~(np.abs(x) < _FIXED_MAX)  # also catches inf and nan
        if not exact_product:  # float64: the product may be inexact; a near-tie goes to Python
            frac = np.abs(scaled - np.floor(scaled) - 0.5)
            fallback |= frac <= 2 * np.spacing(np.abs(scaled))
    # |k| < 10**10 integers, exact in float64; so are the quotients' floors below (a quotient
    # that is not an integer is at least 1e-6 from one, far above its rounding error)
    a = np.abs(np.where(fallback, 0.0, k))
    fallback |= (a > 0) & (a < 100)  # scientific notation
    int_float = np.floor(a / _SCALE)
    frac_float = a - int_float * _SCALE
    big = int_float >= 10 ** _INT_DIGITS  # e.g. 9999.9999996 rounds up to 10000.0
    if big.any():
        fallback |= big
        int_float[big] = 0
    hi_float = np.floor(frac_float / 1000.0)
    int_part = int_float.astype(np.intp)
    hi = hi_float.astype(np.intp)
    lo = (frac_float - hi_float * 1000.0).astype(np.intp)

    # One 16-byte field per value, four native uint32 words gathered from the word tables:
    # [' ' separator, sign, 0, 0] [integer digits] ['.', 3 fraction digits] [3 fraction digits,
    # ',']; the first value of a row has no separator and the last one ends in '\n' instead of
    # ','. The zero bytes are deleted in one pass (bytes.translate) and the text split at '\n'.
    words = _word_tables()
    field = np.empty((x.size, 4), np.uint32)
    plus, minus = words["sign"]
    field[:, 0] = plus + np.signbit(x).astype(np.uint32) * (minus - plus)
    field[:, 1] = words["int"][int_part]
    # the first 3 fraction digits lose their trailing zeros only when the last 3 are all 0
    field[:, 2] = words["hi"][hi + 1000 * (lo == 0)]
    field[:, 3] = words["lo"][lo]
    field_bytes = field.view(np.uint8).reshape(x.size, 4 * _WORD)
    if fallback.any():
        odd = np.flatnonzero(fallback)
        field_bytes[odd, 1:-1] = 0
        field_bytes[odd, 1] = _PLACEHOLDER
    row_bytes = field_bytes.reshape(rows, width * 4 * _WORD)
    row_bytes[:, 0] = 0  # no separator before a row's first value
    row_bytes[:, -1] = ord("\n")  # a row's last value: end of row instead of ','
    text = row_bytes.tobytes().translate(None, b"\0").decode("ascii")
    out = text.split("\n")
    out.pop()  # after the last row's '\n'
    if fallback.any():
        fallback_rows = fallback.reshape(rows, width)
        for r in np.flatnonzero(fallback_rows.any(axis=1)).tolist():
            pieces = out[r].split(chr(_PLACEHOLDER))
            odd = [python_rounded_json(v) for v in values[r][fallback_rows[r]]]
            out[r] = "".join(p + s for p, s in zip(pieces, odd + [""]))
    return out
