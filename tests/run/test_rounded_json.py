"""The vectorized round(x, 6) + json.dumps writer against Python's own round + json.dumps."""
import json
import os

import numpy as np
import pytest

from bert_tf.run import rounded_json
from bert_tf.run.rounded_json import rounded_json_joined, rounded_json_rows


def _python_rows(values):
    """What the original writes: json.dumps of [round(float(x), 6) ...], brackets removed."""
    return [json.dumps([round(float(x), 6) for x in row])[1:-1] for row in values]


ADVERSARIAL = [
    0.0, -0.0, 1e-7, -1e-7, 4.9e-7, 5e-7, -5e-7, 5.000001e-7, 1.5e-6, 2.5e-6,  # ties / tiny
    0.0078125, -0.0078125, 0.0234375, 1.0078125, 0.5, -0.5, 0.1234565, 0.1234575,  # m/128 ties
    1e-6, 9.9e-5, 9.99999e-5, 1e-4, -1e-4, 0.00010049999, 0.000123, 1.2e-5, 1e-5,  # sci / fixed edge
    1.0, -1.0, 10.0, 123456.789, 999999.9999995, 1e8, 123456789.5, 999999999.0,  # integer parts
    1e9, -1e9, 1e10, 1.5e15, 1e16, 1e17, 3.4028234663852886e38, -3.4028234663852886e38,  # large
    9999.999999, 9999.9999996, -9999.9999996, 9999.4999995, 10000.0, 1e-30, 1e-45, -1e-38, float("inf"), float("-inf"), float("nan"),  # extremes
]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_adversarial_values_match_python_exactly(dtype):
    with np.errstate(over="ignore"):
        values = np.array(ADVERSARIAL, dtype=dtype).reshape(-1, 1)
    rows = values.reshape(1, -1)
    assert rounded_json_rows(values) == _python_rows(values)
    assert rounded_json_rows(rows) == _python_rows(rows)


def test_hand_worked_texts():
    got = rounded_json_rows(np.array([[0.0078125, -1e-7, 5e-6, 1e-4, 2.0, 1e9, float("nan")]],
                                     np.float32))
    # half to even at the 7th decimal; -0.0 keeps its sign; < 1e-4 is scientific; NaN as JSON
    assert got == ["0.007812, -0.0, 5e-06, 0.0001, 2.0, 1000000000.0, NaN"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ties_and_their_neighbours_at_every_scale(dtype):
    rng = np.random.RandomState(0)
    k = rng.randint(-10 ** 9, 10 ** 9, 3000)
    ties = ((k + 0.5) / 1e6).astype(dtype)
    values = np.concatenate([ties, np.nextafter(ties, dtype(np.inf)),
                             np.nextafter(ties, dtype(-np.inf))]).reshape(-1, 90)
    assert rounded_json_rows(values) == _python_rows(values)


def test_random_values_of_every_magnitude():
    rng = np.random.RandomState(1)
    scale = rng.choice([1e-8, 1e-6, 1e-5, 1e-4, 1e-2, 1.0, 1e3, 1e8, 1e10], (200, 64))
    values = (rng.randn(200, 64) * scale).astype(np.float32)
    assert rounded_json_rows(values) == _python_rows(values)


def test_real_activations_of_the_golden_minilm_run(golden_dir):
    # all 16 x 128 x 384 last-layer values of the original's MiniLM run
    outputs = np.load(os.path.join(golden_dir, "bert", "minilm", "outputs.npz"))
    values = outputs["sequence_output"].reshape(-1, 384)
    assert rounded_json_rows(values) == _python_rows(values)


def test_shape_errors_and_empty_input():
    assert rounded_json_rows(np.zeros((0, 3), np.float32)) == []
    with pytest.raises(ValueError, match="2-D"):
        rounded_json_rows(np.zeros(3, np.float32))


def test_rows_beyond_one_chunk_are_formatted_alike():
    # issue 24: wide inputs are formatted a chunk of rows at a time (memory); the rows of every
    # chunk, the last partial one included, read as json.dumps(round(float(x), 6)) does.
    values = (np.random.RandomState(3).standard_normal([300, 1000]) * 7).astype(np.float32)
    rows = rounded_json_rows(values)
    assert len(rows) == 300
    for r in (0, 130, 131, 262, 299):  # around the chunk edges (131 rows of 1000 per chunk)
        assert rows[r] == ", ".join(json.dumps(round(float(v), 6)) for v in values[r])


def _python_joined(values, prefixes):
    return b"".join(p + row.encode("ascii") for p, row in zip(prefixes, _python_rows(values)))


def _prefixes(rows):
    # lengths 0..13 and the keys of an extract_features line, as the writer's rows have
    texts = [b"", b"x", b'{"token": "a", "layers": [{"index": -1, "values": [', b"]}, ",
             b'{"linex_index": 12, "features": [{"token": "\\u00e9", "layers": [']
    return [texts[r % len(texts)] + b"!" * (r % 9) for r in range(rows)]


@pytest.mark.parametrize("outliers", [0, 3, 200])
def test_joined_rows_with_prefixes_match_python(outliers):
    # below 10 every value takes the 3-word field; a few values >= 10 (BERT's outlier
    # dimensions) go to Python with it; many take the 4-word field; both give Python's text
    rng = np.random.RandomState(4)
    values = (rng.standard_normal((40, 96)) * 2).astype(np.float32)
    values[0, :8] = [0.0078125, -0.0078125, -0.0, 0.0, -4e-7, 5e-6, -9.9e-5, 9.9999995]
    values[1, :6] = [9.999999, -9.999999, 0.1234565, 1.0, 0.5e-6, 1.5e-6]
    flat = values.reshape(-1)
    flat[rng.choice(flat.size, outliers, replace=False)] = rng.choice([10.0, -12.5, 9999.5, 1e9, np.inf, np.nan], outliers)
    share = outliers / flat.size
    assert (share * rounded_json._ONE_DIGIT_RARE <= 1) == (outliers < 200)  # both fields taken
    prefixes = _prefixes(values.shape[0])
    assert rounded_json_joined(values, prefixes) == _python_joined(values, prefixes)
    assert rounded_json_rows(values) == _python_rows(values)


def test_joined_hand_worked_text():
    got = rounded_json_joined(np.array([[0.5, -1e-7], [12.25, 5e-6]], np.float32), [b"[", b"], ["])
    assert got == b"[0.5, -0.0], [12.25, 5e-06"


def test_joined_refuses_a_prefix_count_other_than_the_rows():
    with pytest.raises(ValueError, match="one per row"):
        rounded_json_joined(np.zeros((2, 3), np.float32), [b""])
