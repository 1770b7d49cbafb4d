"""The number of records a bert_tf writer put in a local TFRecord file, kept with the file, and
the check that the file still holds them (issue 27 item 2; bert_tf, beyond the original).

A file cut exactly at a record boundary (a copy interrupted there, a truncation) has sound
framing and reads as a clean, shorter file: only a count written when the file was made tells.
:class:`~bert_tf.data.tfrecord_bytes.LocalTFRecordWriter` (the records of
``create_pretraining_data.py`` in every family) stamps each file with :func:`stamp_records`;
:func:`~bert_tf.data.tfrecord_bytes.count_framed_records` (run by every pre-training reader
before training) checks the stamp with :func:`check_records`. Files without a stamp (written
by the original, or on a file system that keeps none) are read as before.

Where the count is kept: an extended attribute of the record file itself
(:data:`ATTRIBUTE`), not a file beside it. The original ``run_pretraining.py`` takes
``--input_file`` globs such as ``out*`` or ``dir/*`` through ``tf.gfile.Glob``, whose ``*``
also matches dotfiles and subfolders (TF 2.15 and 2.21: ``d/*`` lists ``d/.x`` and
``d/sub``); it would read any file or folder beside the records as a TFRecord, or fail on it.
An attribute is listed by no glob and goes where the file goes (``mv``, ``cp -a``,
``rsync -X``, ``tar --xattrs``; a plain ``cp`` drops it, and copy tools set it last, so a
copy interrupted mid-way carries none and is checked by its framing alone).

A stamp describes the bytes written: ``records`` records, ``num_bytes`` bytes, and the
masked data CRC of record 0 as framed in the file. A writer that rewrites the file in place
(``tf.io.TFRecordWriter`` opens the same inode and keeps its attributes) leaves a stamp that
no longer fits: a different first record, or a file that is not shorter, is taken for such a
rewrite and the stamp is ignored (logged).
"""

import json
import os
from dataclasses import dataclass
from typing import Optional

from absl import logging

from bert_tf.errors import InputDataError

# The extended attribute (Linux "user" namespace) that holds the stamp, as JSON.
ATTRIBUTE = "user.bert_tf.records"


@dataclass(frozen=True)
class RecordStamp:
    """What a writer recorded of one TFRecord file.

    Attributes:
      records: the number of records (int).
      num_bytes: the file's size in bytes (int).
      first_record_crc: the masked CRC-32C of record 0's data as framed in the file (uint32
        as int), or None for a file of no record.
    """

    records: int
    num_bytes: int
    first_record_crc: Optional[int]


def stamp_records(path: str, stamp: RecordStamp) -> bool:
    """Attaches ``stamp`` to the local file ``path`` (before its rename into place, so the
    file appears with it). Returns False, with one INFO line, where the file system or the
    platform keeps no extended attributes; nothing is raised."""
    setxattr = getattr(os, "setxattr", None)
    if setxattr is None:
        return False
    value = json.dumps({"records": stamp.records, "num_bytes": stamp.num_bytes,
                        "first_record_crc": stamp.first_record_crc}).encode("ascii")
    try:
        setxattr(path, ATTRIBUTE, value)
    except OSError as e:
        logging.info("%s: its record count is not kept with it (%s): a copy cut at a record "
                     "boundary will not be found", path, e.strerror or e)
        return False
    return True


def read_stamp(path: str) -> Optional[RecordStamp]:
    """The stamp of the local file ``path``, or None (none, unreadable, not bert_tf's)."""
    getxattr = getattr(os, "getxattr", None)
    if getxattr is None:
        return None
    try:
        value = json.loads(getxattr(path, ATTRIBUTE))
        return RecordStamp(int(value["records"]), int(value["num_bytes"]),
                           None if value["first_record_crc"] is None
                           else int(value["first_record_crc"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def check_records(path: str, records: int, num_bytes: int,
                  first_record_crc: Optional[int]) -> None:
    """Checks a local file whose framing is sound against its stamp, if it has one.

    Args:
      records: the records the file holds now; num_bytes: its size now;
      first_record_crc: record 0's masked data CRC now (None: no record).

    Raises:
      InputDataError: the file is shorter than its writer made it, with fewer records and the
        same first record (or none left): names the file, the records found and the records
        written.
    """
    stamp = read_stamp(path)
    if stamp is None or (records, num_bytes) == (stamp.records, stamp.num_bytes):
        return
    same_start = first_record_crc is None or first_record_crc == stamp.first_record_crc
    if same_start and num_bytes < stamp.num_bytes and records < stamp.records:
        raise InputDataError(
            f"{path}: {records} records, but bert_tf wrote {stamp.records} into it ({num_bytes} "
            f"of {stamp.num_bytes} bytes left): cut short at a record boundary, a copy "
            "interrupted mid-way? (a file rewritten in place by another program: "
            f"setfattr -x {ATTRIBUTE} <file> drops the count)")
    logging.info("%s: rewritten since bert_tf wrote it (%d records, %d bytes then; %d, %d now): "
                 "its recorded count is not used", path, stamp.records, stamp.num_bytes, records,
                 num_bytes)
