"""``create_pretraining_data.py`` with XLNet's flags: the original XLNet ``data_utils.py``
command line (spec ``xlnet.md`` 6), selected by ``--sp_path``.

    python create_pretraining_data.py --use_tpu=False --bsz_per_host=32 \
        --num_core_per_host=16 --seq_len=512 --reuse_len=256 --input_glob='data/*.txt' \
        --save_dir=proc_data/example --num_passes=20 --bi_data=True \
        --sp_path=spiece.model --mask_alpha=6 --mask_beta=1 --num_predict=85

Writes ``<save_dir>/tfrecords/<split>-<task>-<pass>.bsz-....tfrecords``, the
``record_info-...json`` beside it and ``<save_dir>/corpus_info.json`` (task 0), as the
original. The work is :func:`bert_tf.xlnet.data.pretraining.create_data`.
"""

import random
from dataclasses import dataclass
from typing import List

from absl import logging

from bert_tf.xlnet.data.pretraining import create_data
from bert_tf.xlnet.tasks.args import XLNetDataArgs
from bert_tf.tokenization.sentencepiece_prepro import load_sp_model


@dataclass
class XLNetDataResult:
    """What :func:`run` wrote: ``record_infos``, the record_info dict of each pass
    (``num_batch``, ``filenames``, ...; :func:`bert_tf.xlnet.data.pretraining.create_data`)."""

    record_infos: List[dict]

    def summary_lines(self) -> List[str]:
        """What ``create_pretraining_data.py`` prints with XLNet's flags: ``wrote N batches to
        <file>`` per pass."""
        return [f"wrote {info['num_batch']} batches to {info['filenames'][0]}"
                for info in self.record_infos]


def run(args: XLNetDataArgs, py_rng=None) -> XLNetDataResult:
    """Seeds Python's ``random`` with ``--random_seed`` (when given; the original never does)
    and writes the records (:func:`bert_tf.xlnet.data.pretraining.create_data`).

    Args:
      py_rng: the random source of the A/B splits (default: Python's ``random`` module).

    Returns:
      an :class:`XLNetDataResult`.

    Raises:
      FlagError, ConfigError, InputDataError: one line naming the flag or file; nothing is
        written (the files are atomic).
    """
    if py_rng is None:
        py_rng = random
        if args.random_seed is not None:
            random.seed(args.random_seed)
    sp_model = load_sp_model(args.sp_path)
    infos = create_data(args, sp_model, py_rng)
    for info in infos:
        logging.info("wrote %d batches to %s", info["num_batch"], info["filenames"][0])
    return XLNetDataResult(infos)


