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
* Everything else (``0 < |k| < 100``: scientific notation such as ``5e-06``; ``|x| >= 1e9``;
  inf / nan, which ``json.dumps`` writes ``Infinity`` / ``NaN``; float64 input whose product
  ``x * 1e6`` may be inexact near a tie) is formatted by Python's own
  ``json.dumps(round(float(x), 6))``, one value at a time.
"""

import json
from typing import List

import numpy as np

_DECIMALS = 6
_SCALE = 10.0 ** _DECIMALS
_FIXED_MAX = 1e9  # |x| below this: integer part <= 9 digits, |k| < 10**15
_INT_DIGITS = 9
_PLACEHOLDER = 1  # byte marking a value Python formats
# field of one value: sign, 9 integer digits, '.', 6 fraction digits, ', '
_FIELD = 1 + _INT_DIGITS + 1 + _DECIMALS + 2
_INT_POW = 10 ** np.arange(_INT_DIGITS - 1, -1, -1, dtype=np.int64)  # [1e8 .. 1]
_FRAC_POW = 10 ** np.arange(_DECIMALS - 1, -1, -1, dtype=np.int64)  # [1e5 .. 1]


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
    exact_product = values.dtype.itemsize <= 4
    x = values.astype(np.float64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = x * _SCALE
        k = np.rint(scaled)
        fallback = ~(np.abs(x) < _FIXED_MAX)  # also catches inf and nan
        if not exact_product:  # float64: the product may be inexact; a near-tie goes to Python
            frac = np.abs(scaled - np.floor(scaled) - 0.5)
            fallback |= frac <= 2 * np.spacing(np.abs(scaled))
    k = np.where(fallback, 0.0, k)
    a = np.abs(k).astype(np.int64)
    fallback |= (a > 0) & (a < 100)  # scientific notation
    negative = np.signbit(x)
    int_part = a // 10 ** _DECIMALS
    frac_part = a % 10 ** _DECIMALS

    field = np.zeros((x.size, _FIELD), np.uint8)
    int_digits = (int_part[:, None] // _INT_POW) % 10  # [n, 9]
    # leading zeros dropped, the units digit always kept
    num_int_digits = np.maximum(1, _count_digits(int_part))
    keep_int = np.arange(_INT_DIGITS)[None, :] >= (_INT_DIGITS - num_int_digits)[:, None]
    frac_digits = (frac_part[:, None] // _FRAC_POW) % 10  # [n, 6]
    # trailing zeros dropped, the first fraction digit always kept
    trailing = _trailing_zeros(frac_part)
    keep_frac = np.arange(_DECIMALS)[None, :] < np.maximum(1, _DECIMALS - trailing)[:, None]
    field[:, 0] = np.where(negative, ord("-"), 0)
    field[:, 1:1 + _INT_DIGITS] = np.where(keep_int, int_digits + ord("0"), 0)
    field[:, 1 + _INT_DIGITS] = ord(".")
    field[:, 2 + _INT_DIGITS:2 + _INT_DIGITS + _DECIMALS] = np.where(keep_frac, frac_digits + ord("0"), 0)
    field[:, -2] = ord(",")
    field[:, -1] = ord(" ")
    field[fallback, :-2] = 0
    field[fallback, 0] = _PLACEHOLDER
    field = field.reshape(rows, width, _FIELD)
    field[:, -1, -2:] = 0  # no separator after a row's last value
    nonzero = field != 0
    lengths = nonzero.reshape(rows, -1).sum(axis=1)
    text = field[nonzero].tobytes().decode("ascii")
    fallback_rows = fallback.reshape(rows, width)
    out = []
    start = 0
    for r in range(rows):
        row = text[start:start + lengths[r]]
        start += lengths[r]
        if fallback_rows[r].any():
            pieces = row.split(chr(_PLACEHOLDER))
            odd = [python_rounded_json(v) for v in values[r][fallback_rows[r]]]
            row = "".join(p + s for p, s in zip(pieces, odd + [""]))
        out.append(row)
    return out


def _count_digits(n: np.ndarray) -> np.ndarray:
    """Decimal digits of non-negative int64 ``n < 10**9`` (0 has 0 digits)."""
    return (n[:, None] >= _INT_POW[::-1][None, :]).sum(axis=1) * (n > 0)


def _trailing_zeros(n: np.ndarray) -> np.ndarray:
    """Trailing decimal zeros of the 6-digit fraction ``n`` (6 for 0)."""
    count = np.zeros(n.shape, np.int64)
    for p in range(1, _DECIMALS + 1):
        count += (n % 10 ** p) == 0
    return count
