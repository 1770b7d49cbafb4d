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
    rows, width = values.shape
    if rows == 0:
        return []
    tables = _tables()
    exact_product = values.dtype.itemsize <= 4
    x = values.astype(np.float64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = x * _SCALE
        k = np.rint(scaled)
        fallback = ~(np.abs(x) < _FIXED_MAX)  # also catches inf and nan
        if not exact_product:  # float64: the product may be inexact; a near-tie goes to Python
            frac = np.abs(scaled - np.floor(scaled) - 0.5)
            fallback |= frac <= 2 * np.spacing(np.abs(scaled))
    a = np.abs(np.where(fallback, 0.0, k)).astype(np.int64)
    fallback |= (a > 0) & (a < 100)  # scientific notation
    int_part, frac_part = np.divmod(a, 10 ** _DECIMALS)
    big = int_part >= 10 ** _INT_DIGITS  # e.g. 9999.9999996 rounds up to 10000.0
    if big.any():
        fallback |= big
        int_part[big] = 0

    field = np.empty((x.size, _FIELD), np.uint8)
    field[:, 0] = np.signbit(x) * ord("-")
    field[:, 1:1 + _INT_DIGITS] = tables["int"][int_part]
    field[:, 1 + _INT_DIGITS] = ord(".")
    hi, lo = np.divmod(frac_part, 1000)
    # the first 3 fraction digits lose their trailing zeros only when the last 3 are all 0
    field[:, 2 + _INT_DIGITS:5 + _INT_DIGITS] = np.where(
        (lo == 0)[:, None], tables["hi_strip"][hi], tables["hi_full"][hi])
    field[:, 5 + _INT_DIGITS:-2] = tables["lo_strip"][lo]
    field[:, -2] = ord(",")
    field[:, -1] = ord(" ")
    if fallback.any():
        odd = np.flatnonzero(fallback)
        field[odd, :-2] = 0
        field[odd, 0] = _PLACEHOLDER
    field = field.reshape(rows, width * _FIELD)
    field[:, -2:] = 0  # no separator after a row's last value
    nonzero = field != 0
    ends = np.cumsum(np.count_nonzero(nonzero, axis=1)).tolist()
    text = field[nonzero].tobytes().decode("ascii")
    out = [text[start:end] for start, end in zip([0] + ends[:-1], ends)]
    if fallback.any():
        fallback_rows = fallback.reshape(rows, width)
        for r in np.flatnonzero(fallback_rows.any(axis=1)).tolist():
            pieces = out[r].split(chr(_PLACEHOLDER))
            odd = [python_rounded_json(v) for v in values[r][fallback_rows[r]]]
            out[r] = "".join(p + s for p, s in zip(pieces, odd + [""]))
    return out
