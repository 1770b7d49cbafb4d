"""bert_tf.data.squad_features_cache: the gzip JSON-lines feature caches of the XLNet and
ALBERT SQuAD tasks (expected lines written out by hand; the gzip header per RFC 1952)."""
import dataclasses
import gzip
from typing import Dict

import pytest

from bert_tf.data.squad_features_cache import parse_features_cache, write_features_cache


@dataclasses.dataclass
class _Feature:
    unique_id: int
    token_is_max_context: Dict[int, bool]


FEATURES = [_Feature(1000000000, {3: True, 4: False}), _Feature(1000000001, {})]
LINES = [b'{"settings": {"max_seq_length": 64}, "num_features": 2}\n',
         b'{"unique_id": 1000000000, "token_is_max_context": {"3": true, "4": false}}\n',
         b'{"unique_id": 1000000001, "token_is_max_context": {}}\n']


def test_written_lines_and_a_gzip_header_without_name_or_time(tmp_path):
    path = str(tmp_path / "features.gz")
    write_features_cache(path, {"max_seq_length": 64}, FEATURES)
    raw = open(path, "rb").read()
    assert raw[:4] == b"\x1f\x8b\x08\x00"  # magic, deflate, FLG = 0: no FNAME
    assert raw[4:8] == b"\x00\x00\x00\x00"  # MTIME 0
    assert gzip.decompress(raw) == b"".join(LINES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["features.gz"]  # no temporary left


def test_parse_gives_settings_and_features_with_int_keys():
    settings, features = parse_features_cache(LINES[0], LINES[1:], _Feature)
    assert settings == {"max_seq_length": 64}
    assert features == FEATURES
    assert list(features[0].token_is_max_context) == [3, 4]


def test_parse_refuses_a_count_other_than_the_header():
    with pytest.raises(ValueError, match="^1 features, header says 2$"):
        parse_features_cache(LINES[0], LINES[1:2], _Feature)
