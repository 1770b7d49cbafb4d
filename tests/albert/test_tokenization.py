"""ALBERT FullTokenizer against the original ALBERT tokenization.py (golden README section A)."""
import json
import os
import subprocess
import sys

import pytest

from bert_tf.albert import tokenization
from bert_tf.albert.tokenization import FullTokenizer, encode_ids, encode_pieces, preprocess_text
from bert_tf.errors import ConfigError


def _golden_lines(golden_dir, name):
    with open(os.path.join(golden_dir, "albert", "tokenization", name), encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert len(lines) == 400  # MRPC train rows 1..200, #1 and #2
    return lines


@pytest.fixture(scope="module")
def spiece_model(shared_data_dir):
    """The real XLNet SentencePiece model the goldens used (golden README 'Inputs used')."""
    path = os.path.join(shared_data_dir, "xlnet", "spiece.model")
    if not os.path.exists(path):
        pytest.skip(f"{path} is absent")
    return path


@pytest.fixture(scope="module")
def spm_tokenizer(spiece_model):
    return FullTokenizer(vocab_file=None, do_lower_case=True, spm_model_file=spiece_model)


def test_wordpiece_matches_every_golden_line(golden_dir, uncased_vocab_file):
    tok = FullTokenizer(vocab_file=uncased_vocab_file, do_lower_case=True)
    assert tok.sp_model is None and len(tok.vocab) == 30522
    for line in _golden_lines(golden_dir, "wordpiece_uncased.jsonl"):
        tokens = tok.tokenize(line["text"])
        assert tokens == line["tokens"], line["source"]
        assert tok.convert_tokens_to_ids(tokens) == line["ids"], line["source"]
        assert tok.convert_ids_to_tokens(line["ids"]) == line["tokens"], line["source"]


@pytest.mark.parametrize("name, do_lower_case", [("spm_do_lower_case_true.jsonl", True),
                                                 ("spm_do_lower_case_false.jsonl", False)])
def test_sentencepiece_matches_every_golden_line(golden_dir, spiece_model, name, do_lower_case):
    tok = FullTokenizer(vocab_file=None, do_lower_case=do_lower_case, spm_model_file=spiece_model)
    assert len(tok.vocab) == 32000
    for line in _golden_lines(golden_dir, name):
        assert line["lower"] is do_lower_case
        tokens = tok.tokenize(line["text"])
        assert tokens == line["tokens"], line["source"]
        assert tok.convert_tokens_to_ids(tokens) == line["ids"], line["source"]
        pre = preprocess_text(line["text"], lower=line["lower"])
        assert pre == line["preprocessed"], line["source"]
        pp_tokens = tok.tokenize(pre)
        assert pp_tokens == line["pp_tokens"], line["source"]
        assert tok.convert_tokens_to_ids(pp_tokens) == line["pp_ids"], line["source"]
        assert encode_ids(tok.sp_model, pre) == line["encode_ids"], line["source"]


def test_sentencepiece_ignores_do_lower_case(golden_dir, spiece_model):
    # The golden property (README section A): tokens identical in both files, pp_tokens never.
    upper = _golden_lines(golden_dir, "spm_do_lower_case_false.jsonl")
    lower = _golden_lines(golden_dir, "spm_do_lower_case_true.jsonl")
    assert all(a["tokens"] == b["tokens"] for a, b in zip(upper, lower))
    assert all(a["pp_tokens"] != b["pp_tokens"] for a, b in zip(upper, lower))
    t_true = FullTokenizer(None, True, spiece_model)
    t_false = FullTokenizer(None, False, spiece_model)
    text = lower[0]["text"]  # "Amrozi accused his brother, ..."
    assert t_true.tokenize(text) == t_false.tokenize(text) == lower[0]["tokens"]
    assert lower[0]["tokens"][:3] == ["▁Am", "ro", "zi"]  # not lower-cased


def test_digit_comma_keeps_the_added_underline(spm_tokenizer):
    """Surprise 3: "3," (no leading ▁) is re-encoded as EncodeAsPieces("3") = ["▁3"] and the
    original's str/bytes comparison never strips that ▁; a "▁1990," piece splits as usual."""
    sp = spm_tokenizer.sp_model
    assert sp.EncodeAsPieces("No.3, then") == ["▁No", ".", "3,", "▁then"]  # raw model output
    assert sp.EncodeAsPieces("3") == ["▁3"]
    assert encode_pieces(sp, "No.3, then") == ["▁No", ".", "▁3", ",", "▁then"]
    assert sp.EncodeAsPieces("in 1990, the") == ["▁in", "▁1990,", "▁the"]
    assert encode_pieces(sp, "in 1990, the") == ["▁in", "▁1990", ",", "▁the"]
    assert spm_tokenizer.tokenize("in 1990, the") == ["▁in", "▁1990", ",", "▁the"]


def test_bert_special_tokens_are_unk_with_this_model(spm_tokenizer):
    # The XLNet model has no [CLS]/[SEP]/[MASK] pieces: PieceToId gives 0 = <unk>.
    tokens = ["[CLS]", "[SEP]", "[MASK]", "<unk>", "<cls>", "<sep>"]
    assert spm_tokenizer.convert_tokens_to_ids(tokens) == [0, 0, 0, 0, 3, 4]
    assert spm_tokenizer.convert_ids_to_tokens([0, 1, 2, 3, 4, 5, 6, 7, 8]) == [
        "<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"]
    assert spm_tokenizer.vocab["<mask>"] == 6 and spm_tokenizer.inv_vocab[6] == "<mask>"


def test_preprocess_text_by_hand():
    # whitespace collapsed; NFKD + combining marks dropped; no LaTeX-quote rewrite (unlike XLNet)
    assert preprocess_text("  Ça\tva\u00a0 ``bien''  ") == "Ca va ``bien''"
    assert preprocess_text("  Ça\tva\u00a0 ``bien''  ", lower=True) == "ca va ``bien''"
    assert preprocess_text("ＡＢＣ½") == "ABC1\u20442"  # NFKD folds compatibility characters
    assert preprocess_text(" a  b ", remove_space=False) == " a  b "
    assert preprocess_text("Café".encode("utf-8")) == "Cafe"


def test_load_vocab_takes_the_first_field_and_keeps_first_ids(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[PAD]\nhello -1.5\n\nhello\n  \nworld\n")
    assert dict(tokenization.load_vocab(str(path))) == {"[PAD]": 0, "hello": 1, " ": 2, "world": 3}


def test_empty_spm_model_file_selects_wordpiece(golden_dir, uncased_vocab_file):
    # run_classifier's --spm_model_file= (empty) takes the WordPiece path (surprise 5)
    tok = FullTokenizer(uncased_vocab_file, do_lower_case=True, spm_model_file="")
    assert tok.sp_model is None
    line = _golden_lines(golden_dir, "wordpiece_uncased.jsonl")[0]
    assert tok.tokenize(line["text"]) == line["tokens"]
    assert tok.convert_tokens_to_ids(["[CLS]", "[SEP]", "[MASK]"]) == [101, 102, 103]


def test_bad_inputs_raise_config_errors(tmp_path):
    bad = tmp_path / "spiece.model"
    bad.write_bytes(b"not a model")
    # one loader with XLNet's; a new user saw SentencePiece's INTERNAL: ... ParseFromArray line
    with pytest.raises(ConfigError) as e:
        FullTokenizer(None, spm_model_file=str(bad))
    assert str(e.value) == f"{bad}: cannot load SentencePiece model (not a SentencePiece model)"
    with pytest.raises(ConfigError) as e:
        FullTokenizer(None, spm_model_file=str(tmp_path / "nope.model"))
    assert str(e.value) == f"{tmp_path / 'nope.model'}: cannot load SentencePiece model (no such file)"
    with pytest.raises(ConfigError, match=r": cannot load SentencePiece model \(is a folder\)$"):
        FullTokenizer(None, spm_model_file=str(tmp_path))
    with pytest.raises(ConfigError, match="cannot read vocab file"):
        FullTokenizer(str(tmp_path / "nope.txt"))
    with pytest.raises(ConfigError, match="needs a vocab_file or an spm_model_file"):
        FullTokenizer(None)
    with pytest.raises(ConfigError, match="TF-Hub is not supported"):
        FullTokenizer.from_hub_module("https://tfhub.dev/google/albert_base/3")


def test_works_without_tensorflow_hub(uncased_vocab_file):
    """Surprise 1: the original cannot even be imported without TF-Hub. Here a blocked
    `tensorflow_hub` (and TensorFlow) does not stop import or tokenization."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('tensorflow_hub', 'tensorflow'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from bert_tf.albert.tokenization import FullTokenizer\n"
        f"print(FullTokenizer({uncased_vocab_file!r}).tokenize('Hello world'))\n")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=repo))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['hello', 'world']"
