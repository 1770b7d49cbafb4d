"""`tf.train.Example` bytes and TFRecord files written without TensorFlow (numpy only).

Two pieces, each equal byte for byte to what TensorFlow writes:

* the protobuf wire format of an ``Example`` whose features are int64 or float lists
  (``tensorflow/core/example/example.proto``, ``feature.proto``): ``Example.features`` (field
  1) -> ``Features.feature`` (field 1, a map: one entry message per key, key = field 1,
  value = field 2) -> ``Feature.float_list`` (field 2) / ``Feature.int64_list`` (field 3) ->
  ``value`` (field 1, packed: varints, or 4-byte little-endian floats). A protobuf map has no
  defined order on the wire; the entries are written in the order given (the caller passes
  the order its reference writer used, see
  ``bert_tf.data.pretraining_output.ORIGINAL_WIRE_ORDER``);
* TFRecord framing (``tensorflow/core/lib/io/record_writer.cc``): ``uint64 length``,
  ``uint32 masked_crc32c(length)``, the data, ``uint32 masked_crc32c(data)``, little-endian,
  where ``masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8`` mod 2**32 and CRC-32C is the
  Castagnoli polynomial (reflected 0x82F63B78). The CRCs of many records are computed at once
  with numpy (4 bytes per step over all records), so writing costs little Python time.

Why: ``create_pretraining_data.py`` then needs no TensorFlow import (about 5 CPU seconds) for
local files, and no per-record protobuf objects (issue 16).
"""

import os
import struct
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np

from bert_tf.atomic_files import (CommitOnExit, atomic_path, check_output_path,
                                   exit_atomic_context, is_remote, write_error)
from bert_tf.data import record_counts
from bert_tf.errors import InputDataError

_CASTAGNOLI_REFLECTED = 0x82F63B78
_MASK_DELTA = 0xA282EAD8
# Records whose CRCs are computed in one numpy pass (bounds the [n, length] byte matrix).
RECORDS_PER_CRC_BATCH = 4096


# ---------------------------------------------------------------------------------------------
# Protobuf wire format
# ---------------------------------------------------------------------------------------------

def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# The varints of 0 .. 2**14 - 1 (one or two bytes), looked up.
_SMALL_VARINTS = [_varint(i) for i in range(1 << 14)]


def encode_varint(value: int) -> bytes:
    """The protobuf base-128 varint of an int64 ``value`` (a negative one as its 64-bit two's
    complement: always 10 bytes), e.g. 1 -> ``b"\\x01"``, 300 -> ``b"\\xac\\x02"``.

    Raises:
      ValueError: ``value`` is outside the int64 range.
    """
    if 0 <= value < 16384:
        return _SMALL_VARINTS[value]
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"{value} is outside the int64 range")
    return _varint(value)


def varint_table(size: int) -> List[bytes]:
    """``[encode_varint(i) for i in range(size)]``: the bytes of small non-negative ints, looked
    up instead of encoded (token ids, positions)."""
    return [encode_varint(i) for i in range(size)]


def length_delimited(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: ``tag``, the varint of ``len(payload)``, ``payload``."""
    n = len(payload)
    return tag + (_SMALL_VARINTS[n] if n < 16384 else _varint(n)) + payload


def int64_feature_from_packed(packed: bytes) -> bytes:
    """A ``Feature`` message holding an ``Int64List`` whose packed values are ``packed`` (the
    concatenated varints; empty: an empty list, which protobuf writes as an empty message)."""
    inner = length_delimited(b"\x0a", packed) if packed else b""
    return length_delimited(b"\x1a", inner)


def float_feature_from_packed(packed: bytes) -> bytes:
    """A ``Feature`` message holding a ``FloatList`` whose packed values are ``packed``
    (4-byte little-endian IEEE floats back to back)."""
    inner = length_delimited(b"\x0a", packed) if packed else b""
    return length_delimited(b"\x12", inner)


def int64_feature(values: Iterable[int]) -> bytes:
    """The bytes of ``tf.train.Feature(int64_list=tf.train.Int64List(value=values))``.

    Raises:
      ValueError: a value is outside the int64 range.
    """
    return int64_feature_from_packed(b"".join(encode_varint(int(v)) for v in values))


def float_feature(values: Sequence[float]) -> bytes:
    """The bytes of ``tf.train.Feature(float_list=tf.train.FloatList(value=values))`` (each
    value rounded to float32 as protobuf does)."""
    return float_feature_from_packed(np.asarray(values, dtype="<f4").tobytes())


def map_entry_prefix(key: str) -> bytes:
    """The key part of a ``Features.feature`` map entry (field 1 of the entry), to which
    :func:`example_bytes` appends the value."""
    return length_delimited(b"\x0a", key.encode("utf-8"))


INT64_LIST_TAG = b"\x1a"   # Feature.int64_list, field 3
FLOAT_LIST_TAG = b"\x12"   # Feature.float_list, field 2


def entry_head(prefix: bytes, list_tag: bytes, packed_length: int) -> bytes:
    """The bytes of one whole ``Features.feature`` map entry up to its packed values: with
    ``packed`` of ``packed_length`` bytes, ``entry_head(...) + packed`` is
    ``length_delimited(b"\\x0a", prefix + length_delimited(b"\\x12", feature))`` of the
    ``int64_feature_from_packed`` / ``float_feature_from_packed`` (``list_tag``) feature, as
    :func:`example_bytes` writes it; a fixed-length list has a constant head.

    Args:
      prefix: :func:`map_entry_prefix` of the key.
      list_tag: :data:`INT64_LIST_TAG` or :data:`FLOAT_LIST_TAG`.
    """
    if packed_length:
        list_head = b"\x0a" + encode_varint(packed_length)
    else:
        list_head = b""  # an empty list is an empty message
    list_length = len(list_head) + packed_length
    feature_head = list_tag + encode_varint(list_length)
    feature_length = len(feature_head) + list_length
    value_head = b"\x12" + encode_varint(feature_length)
    entry_length = len(prefix) + len(value_head) + feature_length
    return b"\x0a" + encode_varint(entry_length) + prefix + value_head + feature_head + list_head


def example_from_entry_bytes(entries: bytes) -> bytes:
    """A serialized ``Example`` from its map entries already serialized back to back (each
    ``entry_head(...) + packed``)."""
    return length_delimited(b"\x0a", entries)


def example_bytes(entries: Sequence[Tuple[bytes, bytes]]) -> bytes:
    """A serialized ``tf.train.Example`` from ``(map_entry_prefix(key), feature bytes)`` pairs,
    the map entries in the order given.

    Equal to ``tf.train.Example.SerializeToString()`` of the same features when that writes
    the map in the same order (protobuf's ``deterministic=True`` sorts the keys).
    """
    body = b"".join(length_delimited(b"\x0a", prefix + length_delimited(b"\x12", feature))
                    for prefix, feature in entries)
    return length_delimited(b"\x0a", body)


def _read_varint(data: bytes, pos: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def _fields(data: bytes) -> Iterable[Tuple[int, bytes]]:
    """``(field number, payload)`` of each length-delimited field of a message."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        if key & 7 != 2:
            raise ValueError(f"wire type {key & 7} at byte {pos}: not an Example of lists")
        n, pos = _read_varint(data, pos)
        yield key >> 3, data[pos:pos + n]
        pos += n


def decode_example_bytes(data: bytes) -> Dict[str, list]:
    """``{name: list of int or float}`` of a serialized Example of packed int64 / float lists
    (what :func:`example_bytes` writes), keys in wire order; the inverse of
    :func:`example_bytes`, in pure Python (for logging a few records without TensorFlow).

    Raises:
      ValueError: a field this writer never writes (bytes lists, unpacked values).
    """
    out = {}
    for _, features in _fields(data):
        for _, entry in _fields(features):
            key, values = "", []
            for number, payload in _fields(entry):
                if number == 1:
                    key = payload.decode("utf-8")
                    continue
                for kind, value_list in _fields(payload):
                    for _, packed in _fields(value_list):
                        if kind == 3:
                            pos = 0
                            while pos < len(packed):
                                v, pos = _read_varint(packed, pos)
                                values.append(v - (1 << 64) if v >= 1 << 63 else v)
                        elif kind == 2:
                            values.extend(np.frombuffer(packed, dtype="<f4").tolist())
                        else:
                            raise ValueError(f"feature {key!r}: bytes lists are not decoded")
            out[key] = values
    return out


# ---------------------------------------------------------------------------------------------
# CRC-32C and TFRecord framing
# ---------------------------------------------------------------------------------------------

def _crc_tables() -> np.ndarray:
    """Slicing-by-4 tables, [4, 256] uint32: ``t[0]`` the bytewise table, ``t[k][b]`` the CRC
    register after byte ``b`` followed by ``k`` zero bytes."""
    t = np.zeros((4, 256), dtype=np.uint32)
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ _CASTAGNOLI_REFLECTED if c & 1 else c >> 1
        t[0, b] = c
    for k in range(1, 4):
        t[k] = (t[k - 1] >> 8) ^ t[0][t[k - 1] & 0xFF]
    return t


_TABLES = _crc_tables()


def _raw_crc_rows(rows: np.ndarray) -> np.ndarray:
    """The CRC register (initial 0, no final xor) of each row of a [n, 4 * w] uint8 matrix."""
    t0, t1, t2, t3 = _TABLES
    words = np.ascontiguousarray(rows.view("<u4").T)  # [w, n]: one contiguous row per step
    crc = np.zeros(rows.shape[0], dtype="<u4")
    octets = crc.view(np.uint8).reshape(-1, 4)  # the register's bytes, low first
    for j in range(words.shape[0]):
        crc ^= words[j]
        crc[:] = t3[octets[:, 0]] ^ t2[octets[:, 1]] ^ t1[octets[:, 2]] ^ t0[octets[:, 3]]
    return crc


_ZERO_RUN_CRC = {}  # length -> register after `length` zero bytes from 0xFFFFFFFF


def _zero_run_crc(length: int) -> int:
    crc = _ZERO_RUN_CRC.get(length)
    if crc is None:
        c, t0 = 0xFFFFFFFF, _TABLES[0]
        for _ in range(length):
            c = int(t0[c & 0xFF]) ^ (c >> 8)
        crc = _ZERO_RUN_CRC[length] = c
    return crc


def crc32c_many(datas: Sequence[bytes]) -> np.ndarray:
    """CRC-32C (Castagnoli; ``crc32c(b"123456789") == 0xE3069283``) of each bytes object, as
    [len(datas)] uint32.

    All records are processed together: each is right-aligned in a zero-padded matrix (leading
    zeros leave a zero register unchanged, and CRC is linear, so the register started at
    ``0xFFFFFFFF`` is the zero-started one XOR the register of the same number of zero bytes).
    """
    n = len(datas)
    if n == 0:
        return np.zeros(0, dtype=np.uint32)
    lengths = [len(d) for d in datas]
    width = -(-max(lengths) // 4) * 4
    if width == 0:
        return np.zeros(n, dtype=np.uint32)
    padded = b"".join(b"\x00" * (width - m) + d for m, d in zip(lengths, datas))
    crc = _raw_crc_rows(np.frombuffer(padded, dtype=np.uint8).reshape(n, width))
    offsets = np.array([_zero_run_crc(m) for m in lengths], dtype=np.uint32)
    return crc ^ offsets ^ np.uint32(0xFFFFFFFF)


def crc32c(data: bytes) -> int:
    """CRC-32C of one bytes object (see :func:`crc32c_many`)."""
    return int(crc32c_many([data])[0])


def masked_crc32c_many(datas: Sequence[bytes]) -> np.ndarray:
    """TFRecord's masked CRC-32C of each bytes object, [n] uint32 (``record_writer.cc``)."""
    c = crc32c_many(datas).astype(np.uint64)
    return (((c >> np.uint64(15)) | (c << np.uint64(17))) + np.uint64(_MASK_DELTA)
            ).astype(np.uint32)


def tfrecord_frames(datas: Sequence[bytes]) -> bytes:
    """The TFRecord file bytes of ``datas`` in order (what ``tf.io.TFRecordWriter`` writes)."""
    headers = [struct.pack("<Q", len(d)) for d in datas]
    header_crcs = masked_crc32c_many(headers).tolist()
    data_crcs = masked_crc32c_many(datas).tolist()
    pack = struct.Struct("<I").pack
    return b"".join(h + pack(hc) + d + pack(dc)
                    for h, hc, d, dc in zip(headers, header_crcs, datas, data_crcs))


_HEADER = struct.Struct("<QI")  # length, masked_crc32c(length)


def count_framed_records(path: str) -> int:
    """The number of records of the TFRecord file ``path`` (uncompressed; local, or any
    ``tf.io.gfile`` path), from its framing alone: every header's length CRC and the last
    record's data CRC are checked, and the file must end exactly after a record. bert_tf:
    TensorFlow's reader takes a file cut inside a record header for a clean end of file, so
    a copy interrupted there read as a shorter file. Reads 12 bytes per record. A local file
    that bert_tf wrote is also checked against the record count stamped on it
    (:mod:`bert_tf.data.record_counts`): a file cut at a record boundary is found too.

    Raises:
      InputDataError: the file is cut short or damaged (names it, the record and the byte
        offset), or holds fewer records than its writer stamped (names both counts).
    """
    if is_remote(path):
        import tensorflow as tf
        opener, size = (lambda: tf.io.gfile.GFile(path, "rb")), tf.io.gfile.stat(path).length
    else:
        opener, size = (lambda: open(path, "rb")), os.path.getsize(path)
    offset, lengths, length_crcs, offsets = 0, [], [], []
    with opener() as f:
        while offset < size:
            if size - offset < _HEADER.size:
                raise InputDataError(
                    f"{path}: cut short inside the header of record {len(lengths)} (byte "
                    f"{offset} of {size}): a copy interrupted mid-way?")
            f.seek(offset)
            header = f.read(_HEADER.size)
            lengths.append(header[:8])
            length_crcs.append(_HEADER.unpack(header)[1])
            offsets.append(offset)
            offset += _HEADER.size + _HEADER.unpack(header)[0] + 4
            if offset > size:
                bad = [i for i, ok in enumerate(_crcs_match(lengths, length_crcs)) if not ok]
                n = bad[0] if bad else len(lengths) - 1
                what = "has a damaged header" if bad else "is cut short"
                raise InputDataError(f"{path}: record {n} {what} (byte {offsets[n]} of "
                                     f"{size}): a copy interrupted mid-way, or not a TFRecord "
                                     "file?")
        bad = [i for i, ok in enumerate(_crcs_match(lengths, length_crcs)) if not ok]
        if bad:
            raise InputDataError(f"{path}: record {bad[0]} has a damaged header (byte "
                                 f"{offsets[bad[0]]}): a damaged copy?")
        if lengths:
            f.seek(offsets[-1] + _HEADER.size)
            data = f.read(struct.unpack("<Q", lengths[-1])[0])
            (data_crc,) = struct.unpack("<I", f.read(4))
            if not _crcs_match([data], [data_crc])[0]:
                raise InputDataError(f"{path}: the last record ({len(lengths) - 1}) is damaged "
                                     "(its data CRC does not match)")
        if not is_remote(path):  # the count its writer recorded, if any
            first_crc = None
            if lengths:
                f.seek(_HEADER.size + struct.unpack("<Q", lengths[0])[0])
                (first_crc,) = struct.unpack("<I", f.read(4))
            record_counts.check_records(path, len(lengths), size, first_crc)
    return len(lengths)


def _crcs_match(datas: Sequence[bytes], crcs: Sequence[int]) -> List[bool]:
    if not datas:
        return []
    return (masked_crc32c_many(datas) == np.asarray(crcs, np.uint32)).tolist()


class LocalTFRecordWriter(CommitOnExit):
    """A TFRecord file on local disk, written atomically (temporary file + rename on close)
    with the framing of :func:`tfrecord_frames`; the same bytes as ``tf.io.TFRecordWriter``
    without compression. Records are buffered and framed ``RECORDS_PER_CRC_BATCH`` at a time.

    Use as a context manager; on an exception the temporary file is removed and ``path`` is
    left as it was.

    Raises:
      OutputPathError: ``path`` is a folder, or its folder cannot be created or written.
    """

    def __init__(self, path: str):
        self.path = path
        check_output_path(path, create_parent=True)
        self._context = atomic_path(path, suffix=".tfrecord")
        self._tmp = self._context.__enter__()
        self._file = open(self._tmp, "wb")
        self._pending = []
        self.count = 0
        self._num_bytes = 0
        self._first_record_crc = None

    def write(self, data: bytes) -> None:
        """Appends one record.

        Raises:
          OutputPathError: the write failed (a full disk; :func:`write_error`).
        """
        self._pending.append(data)
        self.count += 1
        if len(self._pending) >= RECORDS_PER_CRC_BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            frames = tfrecord_frames(self._pending)
            if self._first_record_crc is None:  # record 0's data CRC, for the stamp
                (self._first_record_crc,) = struct.unpack_from(
                    "<I", frames, _HEADER.size + len(self._pending[0]))
            try:
                self._file.write(frames)
            except OSError as e:
                raise write_error(self.path, e) from e
            self._num_bytes += len(frames)
            self._pending = []

    def prepare(self) -> None:
        """Writes what is buffered, closes the temporary file and stamps it with its record
        count (:func:`bert_tf.data.record_counts.stamp_records`; the rename is :meth:`commit`).
        Raises OutputPathError: the write failed."""
        self._flush()
        try:
            self._file.close()
        except OSError as e:
            raise write_error(self.path, e) from e
        record_counts.stamp_records(self._tmp, record_counts.RecordStamp(
            self.count, self._num_bytes, self._first_record_crc))

    def commit(self) -> None:
        """Renames the temporary file to ``path`` (after :meth:`prepare`)."""
        self._context.__exit__(None, None, None)

    def close(self) -> None:
        self.prepare()
        self.commit()

    def abort(self) -> None:
        try:
            self._file.close()
        except OSError:  # the buffered bytes of a full disk: the file is dropped anyway
            pass
        exit_atomic_context(self._context)


class RecordFilesTogether(CommitOnExit):
    """Several TFRecord files (and small text files beside them) that appear together or not
    at all: on leaving the ``with`` block every record file is written out first, then every
    text, and only then is each renamed into place; on an error (a full disk while writing
    any of them) all temporary files are removed and every path is left as it was.

    Args:
      paths: the record files (local: :class:`LocalTFRecordWriter`; remote: TensorFlow's
        writer, :func:`open_record_writer`).

    Attributes:
      writers: one writer per path (``write(bytes)``, ``count``).

    Raises:
      OutputPathError: a path that cannot be written; a failed write, naming the file.
    """

    def __init__(self, paths: Sequence[str]):
        self.writers = []
        self._texts: List[Tuple[str, str]] = []
        self._text_contexts = []
        try:
            for path in paths:
                self.writers.append(open_record_writer(path))
        except BaseException:
            self.abort()
            raise

    def add_text(self, path: str, text: str) -> None:
        """A text file (e.g. a record_info JSON) to write and rename with the records."""
        self._texts.append((path, text))

    def close(self) -> None:
        try:
            for writer in self.writers:
                writer.prepare()
            for path, text in self._texts:
                context = atomic_path(path)
                self._text_contexts.append(context)
                tmp = context.__enter__()
                try:
                    with open_text_for_write(tmp, path) as f:
                        f.write(text)
                except OSError as e:
                    raise write_error(path, e) from e
        except BaseException:
            self.abort()
            raise
        for writer in self.writers:
            writer.commit()
        for context in self._text_contexts:
            context.__exit__(None, None, None)

    def abort(self) -> None:
        for writer in self.writers:
            writer.abort()
        for context in self._text_contexts:
            exit_atomic_context(context)
        self.writers, self._text_contexts = [], []


def open_text_for_write(tmp: str, path: str):
    """A UTF-8 text file object for the temporary file ``tmp`` of ``path`` (local ``open``,
    or ``tf.io.gfile.GFile`` for a remote ``path``)."""
    from bert_tf.atomic_files import is_remote
    if is_remote(path):
        import tensorflow as tf
        return tf.io.gfile.GFile(tmp, "w")
    return open(tmp, "w", encoding="utf-8")


def open_record_writer(path: str):
    """:class:`LocalTFRecordWriter` for a local path, else the TensorFlow writer
    (``bert_tf.data.tfrecord.AtomicTFRecordWriter``, for ``gs://`` and other file systems)."""
    from bert_tf.atomic_files import is_remote
    if is_remote(path):
        from bert_tf.data.tfrecord import AtomicTFRecordWriter
        return AtomicTFRecordWriter(path)
    return LocalTFRecordWriter(os.fspath(path))
