"""tfrecord_bytes: Example bytes and TFRecord framing without TensorFlow, equal to what
protobuf / tf.io.TFRecordWriter write (hand-worked wire bytes, published CRC-32C vectors)."""
import random
import struct

import pytest
import tensorflow as tf

from bert_tf.data import tfrecord_bytes as tb


@pytest.mark.parametrize("value,expected", [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
    (16383, b"\xff\x7f"), (16384, b"\x80\x80\x01"),
    # negative int64: the 64-bit two's complement, always 10 bytes
    (-1, b"\xff" * 9 + b"\x01"), (-2, b"\xfe" + b"\xff" * 8 + b"\x01"),
    (-(1 << 63), b"\x80" * 9 + b"\x01"), ((1 << 63) - 1, b"\xff" * 8 + b"\x7f"),
])
def test_varint_hand_worked(value, expected):
    assert tb.encode_varint(value) == expected


def test_varint_out_of_int64_range():
    for value in (1 << 63, -(1 << 63) - 1):
        with pytest.raises(ValueError, match="int64 range"):
            tb.encode_varint(value)


def test_features_hand_worked():
    # Feature.int64_list (field 3) -> Int64List.value (field 1, packed): 300 = ac 02
    assert tb.int64_feature([300]) == b"\x1a\x04\x0a\x02\xac\x02"
    # an empty list is an empty Int64List message
    assert tb.int64_feature([]) == b"\x1a\x00"
    # Feature.float_list (field 2): 1.0f = 00 00 80 3f little-endian
    assert tb.float_feature([1.0]) == b"\x12\x06\x0a\x04\x00\x00\x80\x3f"
    # Example{features{feature{key: "a" value{int64_list{value: 1}}}}}
    example = tb.example_bytes([(tb.map_entry_prefix("a"), tb.int64_feature([1]))])
    assert example == b"\x0a\x0c\x0a\x0a\x0a\x01a\x12\x05\x1a\x03\x0a\x01\x01"


@pytest.mark.parametrize("values", [
    [], [0], [-1], [1, 2, 3], [300, 1 << 62, -(1 << 63), (1 << 63) - 1, -300],
    list(range(0, 40000, 97)),
])
def test_int64_feature_equals_protobuf(values):
    proto = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    assert tb.int64_feature(values) == proto.SerializeToString()


@pytest.mark.parametrize("values", [[], [0.0], [1.0, 0.0], [0.1, -2.5, 1e30, -0.0, 3.4e38]])
def test_float_feature_equals_protobuf(values):
    proto = tf.train.Feature(float_list=tf.train.FloatList(value=values))
    assert tb.float_feature(values) == proto.SerializeToString()


def _proto_example(features):
    feats = {}
    for key, (kind, values) in features.items():
        feats[key] = (tf.train.Feature(int64_list=tf.train.Int64List(value=values))
                      if kind == "int" else
                      tf.train.Feature(float_list=tf.train.FloatList(value=values)))
    return tf.train.Example(features=tf.train.Features(feature=feats))


def _ours(features, order):
    return tb.example_bytes([
        (tb.map_entry_prefix(k), tb.int64_feature(features[k][1]) if features[k][0] == "int"
         else tb.float_feature(features[k][1])) for k in order])


def test_example_equals_protobuf():
    # One key: no map order to choose; the whole message equals SerializeToString.
    one = {"x": ("int", [5, -7, 1 << 40])}
    assert _ours(one, ["x"]) == _proto_example(one).SerializeToString()
    # Several keys: protobuf's deterministic serialization sorts the map keys; ours in that
    # order is the same bytes, and in any order parses to the same message.
    many = {"input_ids": ("int", [101, 2023, 102, 0, 0]), "weights": ("float", [1.0, 0.0]),
            "empty": ("int", []), "neg": ("int", [-1, -(1 << 63)]), "ü-key": ("int", [1])}
    proto = _proto_example(many)
    assert _ours(many, sorted(many, key=lambda k: k.encode())) == \
        proto.SerializeToString(deterministic=True)
    shuffled = ["weights", "ü-key", "input_ids", "neg", "empty"]
    assert tf.train.Example.FromString(_ours(many, shuffled)) == proto
    # and the pure-Python decoder reads it back, keys in wire order
    decoded = tb.decode_example_bytes(_ours(many, shuffled))
    assert list(decoded) == shuffled
    assert decoded == {k: v for k, (_, v) in many.items()}


def test_crc32c_published_vectors():
    # The CRC-32C check value, and the RFC 3720 (iSCSI) B.4 test vectors.
    assert tb.crc32c(b"123456789") == 0xE3069283
    assert tb.crc32c(b"") == 0
    assert tb.crc32c(b"\x00" * 32) == 0x8A9136AA
    assert tb.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert tb.crc32c(bytes(range(32))) == 0x46DD794E
    assert tb.crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C
    # many at once, of different lengths (each row padded differently)
    datas = [b"123456789", b"", b"\x00" * 32, bytes(range(32)), b"a"]
    assert tb.crc32c_many(datas).tolist() == [0xE3069283, 0, 0x8A9136AA, 0x46DD794E,
                                              0xC1D04330]


def test_masked_crc_hand_worked():
    # masked = rotr15(crc) + 0xa282ead8 (record_writer.cc): for crc32c(b"") = 0 that is the
    # delta itself.
    assert tb.masked_crc32c_many([b""]).tolist() == [0xA282EAD8]
    c = 0xE3069283
    expected = ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF
    assert tb.masked_crc32c_many([b"123456789"]).tolist() == [expected]


def test_tfrecord_file_equals_tf_writer(tmp_path, monkeypatch):
    monkeypatch.setattr(tb, "RECORDS_PER_CRC_BATCH", 7)  # several framing batches
    rng = random.Random(3)
    datas = [b"", b"\x00", b"x" * 4096] + [
        bytes(rng.randrange(256) for _ in range(rng.randrange(0, 700))) for _ in range(40)]
    theirs, ours = tmp_path / "tf.tfrecord", tmp_path / "ours.tfrecord"
    with tf.io.TFRecordWriter(str(theirs)) as writer:
        for d in datas:
            writer.write(d)
    with tb.LocalTFRecordWriter(str(ours)) as writer:
        for d in datas:
            writer.write(d)
    assert ours.read_bytes() == theirs.read_bytes()
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(ours))] == datas


def test_writer_aborts_leaving_nothing(tmp_path):
    out = tmp_path / "out.tfrecord"
    with pytest.raises(RuntimeError):
        with tb.LocalTFRecordWriter(str(out)) as writer:
            writer.write(b"abc")
            raise RuntimeError("stop")
    assert not out.exists() and list(tmp_path.iterdir()) == []



@pytest.mark.parametrize("values", [[], [7], list(range(200)), [-5] * 20])
def test_entry_head_equals_protobuf(values):
    # entry_head + packed values = the map entry, for int64 and float lists (one key: the
    # whole Example equals SerializeToString).
    packed = b"".join(tb.encode_varint(v) for v in values)
    data = tb.example_from_entry_bytes(
        tb.entry_head(tb.map_entry_prefix("k"), tb.INT64_LIST_TAG, len(packed)) + packed)
    assert data == _proto_example({"k": ("int", values)}).SerializeToString()
    floats = [float(v) / 4 for v in values]
    packed = struct.pack(f"<{len(floats)}f", *floats)
    data = tb.example_from_entry_bytes(
        tb.entry_head(tb.map_entry_prefix("k"), tb.FLOAT_LIST_TAG, len(packed)) + packed)
    assert data == _proto_example({"k": ("float", floats)}).SerializeToString()
