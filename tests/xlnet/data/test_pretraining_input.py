"""XLNet pretraining input pipeline (original data_utils.get_input_fn, spec xlnet.md 6.6-6.7)
against the golden batches the original produced with a fixed row permutation
(tests/golden/xlnet/pretraining_data/parsed_fixed_perm.npz, README section E)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.tfrecord_bytes import tfrecord_frames
from bert_tf.xlnet.data import pretraining_input as xpi
from bert_tf.errors import FlagError, InputDataError

KEYS = ("input_k", "input_q", "seg_id", "label", "perm_mask", "target", "target_mask",
        "target_mapping")


@pytest.fixture(scope="module")
def golden(golden_dir):
    return os.path.join(golden_dir, "xlnet", "pretraining_data")


def test_first_batches_equal_the_original(golden):
    want = np.load(os.path.join(golden, "parsed_fixed_perm.npz"))
    perm = tf.constant(want["fixed_permutation"])
    info = xpi.find_record_info(os.path.join(golden, "tfrecords"), "train", bsz_per_host=4,
                                seq_len=128, reuse_len=64, bi_data=True, mask_alpha=6,
                                mask_beta=1, uncased=False, num_predict=21)
    assert info["num_batch"] == 116 and len(info["filenames"]) == 1
    parser = xpi.make_parser(seq_len=128, reuse_len=64, perm_size=32, num_predict=21,
                             shuffle_fn=lambda index: tf.gather(index, perm))
    dataset = xpi.dataset_fn_builder(info["filenames"], bsz_per_core=4, parser=parser)()
    for b, batch in enumerate(dataset.take(4)):
        for key in KEYS:
            got, expected = batch[key].numpy(), want[f"batch{b}/{key}"]
            assert got.dtype == expected.dtype, key
            np.testing.assert_array_equal(got, expected, err_msg=f"batch{b}/{key}")


def test_local_perm_by_hand():
    """n=4, perm_size 4, order [2, 0, 3, 1] (index[p] = rank of p): tokens a <sep> c d with c
    masked. Context a, d: rev -1; <sep> (functional) rev 0, c (target) rev 3.
    self_rev: a 0, <sep> 1, c 3, d 0. perm_mask[i, j] = self_rev[i] <= rev[j] and j in
    {<sep>, c}: a: <sep> (0<=0) and c; <sep>: c only (1<=3); c: c (3<=3); d: <sep>, c."""
    inputs = tf.constant([10, 4, 12, 13], tf.int64)
    targets = tf.constant([4, 12, 13, 14], tf.int64)
    is_masked = tf.constant([False, False, True, False])
    order = tf.constant([[2], [0], [3], [1]], tf.int64)
    perm_mask, new_targets, target_mask, inputs_k, inputs_q = xpi.local_perm(
        inputs, targets, is_masked, 4, 4, shuffle_fn=lambda index: order)
    np.testing.assert_array_equal(perm_mask.numpy(), [[0, 1, 1, 0], [0, 0, 1, 0],
                                                      [0, 0, 1, 0], [0, 1, 1, 0]])
    assert new_targets.numpy().tolist() == [10, 4, 12, 13]
    assert target_mask.numpy().tolist() == [0, 0, 1, 0] == inputs_q.numpy().tolist()
    assert inputs_k.numpy().tolist() == [10, 4, 12, 13]


def test_record_info_of_other_flags_is_a_clear_error(golden):
    with pytest.raises(InputDataError, match=r"no record_info file matches .*bsz-8"):
        xpi.find_record_info(os.path.join(golden, "tfrecords"), "train", bsz_per_host=8,
                             seq_len=128, reuse_len=64, bi_data=True, mask_alpha=6,
                             mask_beta=1, uncased=False, num_predict=21)


def test_record_info_is_rerooted_and_several_dirs_add_up(tmp_path, golden):
    name = "record_info-train-0-0.bsz-4.seqlen-128.reuse-64.bi.alpha-6.beta-1.fnp-21.json"
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / name).write_text(json.dumps(
            {"filenames": ["/elsewhere/x.tfrecords"], "num_batch": 5}))
        # the files must exist where re-rooted, holding num_batch x bsz_per_host records
        (tmp_path / d / "x.tfrecords").write_bytes(tfrecord_frames([b"r"] * 20))
    info = xpi.find_record_info(f"{tmp_path / 'a'},{tmp_path / 'b'}", "train", 4, 128, 64,
                                True, 6, 1, False, 21)
    assert info == {"num_batch": 10, "filenames": [str(tmp_path / "a" / "x.tfrecords"),
                                                   str(tmp_path / "b" / "x.tfrecords")]}


@pytest.mark.parametrize("perm_size,message", [(65, r"\[1, 64\]"), (24, "must divide")])
def test_bad_perm_size(perm_size, message):
    with pytest.raises(FlagError, match=message):
        xpi.make_parser(seq_len=128, reuse_len=64, perm_size=perm_size, num_predict=21)


def test_unreadable_record_info_or_records_are_one_line(golden, tmp_path, monkeypatch):
    # issue 27 item 5: permission denied through tf.io.gfile was a TensorFlow trace.
    import shutil
    from tests.data.test_text_lines import deny
    records = tmp_path / "tfrecords"
    shutil.copytree(os.path.join(golden, "tfrecords"), records)
    kwargs = dict(bsz_per_host=4, seq_len=128, reuse_len=64, bi_data=True, mask_alpha=6,
                  mask_beta=1, uncased=False, num_predict=21)
    info = xpi.find_record_info(str(records), "train", **kwargs)
    deny(monkeypatch, info["filenames"][0])
    with pytest.raises(InputDataError, match=r"\.tfrecords: cannot read it \(permission denied\)"):
        xpi.find_record_info(str(records), "train", **kwargs)
    monkeypatch.undo()
    info_json = [p for p in records.iterdir() if p.name.startswith("record_info")][0]
    deny(monkeypatch, info_json)
    with pytest.raises(InputDataError, match=f"{info_json}: cannot read it \\(permission denied"):
        xpi.find_record_info(str(records), "train", **kwargs)


def test_records_cut_anywhere_are_found_before_training(golden, tmp_path):
    # issue 27 item 2: a copy cut inside a record header read as a clean, shorter file
    # (XLNet trained on 7 of 139 batches, exit 0).
    import shutil
    records = tmp_path / "tfrecords"
    shutil.copytree(os.path.join(golden, "tfrecords"), records)
    kwargs = dict(bsz_per_host=4, seq_len=128, reuse_len=64, bi_data=True, mask_alpha=6,
                  mask_beta=1, uncased=False, num_predict=21)
    path = xpi.find_record_info(str(records), "train", **kwargs)["filenames"][0]
    data = open(path, "rb").read()
    # record boundaries from the framing: 8-byte length, 4-byte CRC, data, 4-byte CRC
    ends, pos = [], 0
    while pos < len(data):
        pos += 12 + int.from_bytes(data[pos:pos + 8], "little") + 4
        ends.append(pos)
    assert len(ends) == 464 and pos == len(data)
    flipped = data[:-5] + bytes([data[-5] ^ 1]) + data[-4:]  # a bit of the last record
    for damaged, message in [(data[:ends[9] + 5], r"cut short inside the header of record 10"),
                             (data[:ends[9] + 12 + 3], r"record 10 is cut short"),
                             (flipped, r"the last record \(463\) is damaged")]:
        with open(path, "wb") as f:
            f.write(damaged)
        with pytest.raises(InputDataError, match=message):
            xpi.find_record_info(str(records), "train", **kwargs)
    with open(path, "wb") as f:
        f.write(data[:ends[9]])
    with pytest.raises(InputDataError, match=r": 10 records, but .*record_info-train.* counts "
                                             r"464 \(num_batch x bsz_per_host\)"):
        xpi.find_record_info(str(records), "train", **kwargs)
