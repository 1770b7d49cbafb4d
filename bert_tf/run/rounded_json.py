"""JSON text of float arrays rounded to 6 decimals, vectorized, byte for byte as Python's.

The original `extract_features.py` writes every activation as ``round(float(x), 6)`` through
``json.dumps`` (spec `bert.md` 10). Done per float in Python that is most of a run's time;
:func:`rounded_json_rows` and :func:`rounded_json_joined` (rows after their prefixes, e.g. a
whole output line, in one bytes object) write the same bytes with numpy integer arithmetic.

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
  ``x * 1e6`` may be inexact near a tie; and ``|x| >= 9.9999995`` in a chunk where at most one
  value in 128 is that large, which then takes a 3-word field instead of 4) is formatted by
  Python's own ``json.dumps(round(float(x), 6))``, one value at a time.
"""

import json
from typing import List, Sequence

import numpy as np

_DECIMALS = 6
_SCALE = 10.0 ** _DECIMALS
_INT_DIGITS = 4
_FIXED_MAX = 10.0 ** _INT_DIGITS  # |x| below this: integer part of at most 4 digits
_PLACEHOLDER = 1  # byte marking a value Python formats
_CHUNK_VALUES = 1 << 17  # values formatted at once (rounded_json_joined)
_WORD = 4  # bytes of one uint32 word of the output fields (_joined_chunk)
# the 3-word field when at most 1 value in this many has a larger integer part (Python's)
_ONE_DIGIT_RARE = 128
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
    then ``','``); for the 3-word field of one-digit integer parts, ``lead`` [20] (``' '``,
    ``'-'`` at index >= 10, the digit index % 10, ``'.'``) and ``hi3`` [2000] (``hi`` without
    its ``'.'``)."""
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
        lead = np.zeros((2, 10, _WORD), np.uint8)
        lead[:, :, 0] = ord(" ")
        lead[0, :, 1] = lead[1, :, 2] = np.arange(10) + ord("0")
        lead[0, :, 2] = lead[1, :, 3] = ord(".")
        lead[1, :, 1] = ord("-")
        hi3 = np.zeros((2000, _WORD), np.uint8)
        hi3[:, :3] = hi[:, 1:]
        as_words = lambda t: np.ascontiguousarray(t).view(np.uint32).reshape(-1)
        _TABLES["words"] = {"sign": as_words(sign), "int": as_words(tables["int"]),
                            "hi": as_words(hi), "lo": as_words(lo),
                            "lead": as_words(lead.reshape(20, _WORD)), "hi3": as_words(hi3)}
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
    if values.shape[0] == 0:
        return []
    text = rounded_json_joined(values, [b""] + [b"\n"] * (values.shape[0] - 1))
    return text.decode("ascii").split("\n")


def rounded_json_joined(values: np.ndarray, prefixes: Sequence[bytes]) -> bytes:
    """``prefixes[0] + row_0 + prefixes[1] + row_1 + ...``: each row's JSON list body (as
    :func:`rounded_json_rows`) after its prefix, one bytes object (e.g. a whole
    `extract_features.py` line, its keys and tokens in the prefixes).

    Args:
      values: float ``[R, H]`` as :func:`rounded_json_rows`; H >= 1.
      prefixes: R ASCII byte strings without NUL or ``\\x01`` bytes (``json.dumps`` text
        escapes both).

    Returns:
      ASCII bytes.

    Raises:
      ValueError: ``values`` is not 2-D, or ``prefixes`` is not one per row.
    """
    values = np.asarray(values)
    if values.ndim != 2:
        raise ValueError(f"values: expected a 2-D [rows, width] array, got shape {values.shape}")
    if len(prefixes) != values.shape[0]:
        raise ValueError(f"prefixes: expected {values.shape[0]} (one per row), got {len(prefixes)}")
    # A few rows at a time: the temporaries take ~100 bytes per value, so one 512-token line
    # of 4 BERT-Large layers (2M values) at once held ~0.3 GB beside the model (issue 24).
    step = max(1, _CHUNK_VALUES // max(1, values.shape[1]))
    return b"".join(_joined_chunk(values[start:start + step], prefixes[start:start + step])
                    for start in range(0, values.shape[0], step))


def _joined_chunk(values: np.ndarray, prefixes: Sequence[bytes]) -> bytes:
    """:func:`rounded_json_joined` of one chunk of rows.

    Each row is laid out as its prefix (zero-padded to a word) and one field of 3 or 4 native
    uint32 words per value, gathered from the word tables; the zero bytes are deleted in one
    pass (``bytes.translate``). 3 words (``' '`` + sign + integer digit + ``'.'``, 3 fraction
    digits, 3 fraction digits + ``','``) when all but a few values have a one-digit integer
    part (the rest go to Python), else 4 (the integer part of up to 4 digits in a word of its
    own). A row's first value has no separator and its last no ``','``. Values Python formats
    (see the module docstring) are a ``\x01`` placeholder until the end."""
    rows, width = values.shape
    if rows == 0:
        return b""
    exact_product = values.dtype.itemsize <= 4
    # one float64 temporary, scaled, rounded and made absolute in place (rint keeps the sign
    # of a zero, so the sign is read after it); each fresh temporary costs its page faults
    with np.errstate(invalid="ignore", over="ignore"):  # a signalling NaN warns when cast
        a = values.astype(np.float64).reshape(-1)
        if not exact_product:
            scaled = a * _SCALE
            a = np.rint(scaled)
        else:
            np.multiply(a, _SCALE, out=a)
            np.rint(a, out=a)
        sign = np.signbit(a)
        np.abs(a, out=a)
        one_digit = False
        if exact_product:
            fallback = ~(a < _SCALE * 10)  # |x| >= 9.9999995, inf, nan
            outside = int(np.count_nonzero(fallback))
            # a value Python formats costs ~2 us, the 4-word field ~15 ns more per value
            one_digit = outside * _ONE_DIGIT_RARE <= a.size
        if one_digit:
            if outside:
                a[fallback] = 0
            frac = a.astype(np.int32)
            int_part = frac // 1000000
            frac -= int_part * 1000000
        else:
            fallback = ~(a < _FIXED_MAX * _SCALE)  # also catches inf and nan
            if not exact_product:  # float64: the product may be inexact; a near-tie to Python
                half = np.abs(scaled - np.floor(scaled) - 0.5)
                fallback |= half <= 2 * np.spacing(np.abs(scaled))
            # |k| < 10**10 integers, exact in float64; so are the quotients' floors below (a
            # quotient that is not an integer is at least 1e-6 from one, far above its error)
            a[fallback] = 0
            int_part = np.floor(a / _SCALE)
            big = int_part >= 10 ** _INT_DIGITS  # e.g. 9999.9999996 rounds up to 10000.0
            if big.any():
                fallback |= big
                int_part[big] = a[big] = 0
            int_part = int_part.astype(np.int32)
            frac = (a - int_part * _SCALE).astype(np.int32)
    hi = frac // 1000
    lo = frac - hi * 1000
    fallback |= (frac < 100) & (frac > 0) & (int_part == 0)  # scientific: 1e-06 .. 9.9e-05
    any_fallback = bool(fallback.any())

    words = _word_tables()
    prefix_words = (max(len(p) for p in prefixes) + _WORD - 1) // _WORD
    value_words = 3 if one_digit else 4
    buf = np.empty((rows, prefix_words + width * value_words), np.uint32)
    if prefix_words:
        padded = b"".join(p.ljust(prefix_words * _WORD, b"\0") for p in prefixes)
        buf[:, :prefix_words] = np.frombuffer(padded, np.uint32).reshape(rows, prefix_words)
    field = buf[:, prefix_words:].reshape(rows, width, value_words)  # a view of buf
    # the first 3 fraction digits lose their trailing zeros only when the last 3 are all 0
    hi += (lo == 0) * np.int32(1000)
    if one_digit:
        int_part += sign * np.int32(10)
        field[:, :, 0] = words["lead"][int_part].reshape(rows, width)
        field[:, :, 1] = words["hi3"][hi].reshape(rows, width)
    else:
        field[:, :, 0] = words["sign"][sign.view(np.uint8)].reshape(rows, width)
        field[:, :, 1] = words["int"][int_part].reshape(rows, width)
        field[:, :, 2] = words["hi"][hi].reshape(rows, width)
    field[:, :, -1] = words["lo"][lo].reshape(rows, width)
    field_bytes = field.view(np.uint8)  # [rows, width, 4 * value_words]
    if any_fallback:
        odd = fallback.reshape(rows, width)
        field_bytes[odd, 1:-1] = 0
        field_bytes[odd, 1] = _PLACEHOLDER
    field_bytes[:, 0, 0] = 0  # no separator before a row's first value
    field_bytes[:, -1, -1] = 0  # nor a ',' after its last
    text = buf.tobytes().translate(None, b"\0")
    if not any_fallback:
        return text
    pieces = text.split(bytes([_PLACEHOLDER]))
    odd_text = [python_rounded_json(v).encode("ascii") for v in values.reshape(-1)[fallback]]
    return b"".join(p + s for p, s in zip(pieces, odd_text + [b""]))
