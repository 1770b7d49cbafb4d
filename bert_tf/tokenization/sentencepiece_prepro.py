"""XLNet text normalisation and SentencePiece wrappers (the original ``prepro_utils.py``).

Mirrors ``preprocess_text``, ``encode_pieces`` and ``encode_ids`` of the original XLNet release
(spec `xlnet.md` sections 5.1-5.3) and the special-symbol ids of its ``data_utils.py``.
Everything here is pure Python: text in, pieces or ids out.

Facts worth knowing (spec 5.1/5.2, golden README "Surprises" 6):

* accents are removed by default **even for the cased model** (NFKD, then combining marks are
  dropped), which also folds compatibility characters (``½`` -> ``1⁄2``, full-width -> ASCII);
* the LaTeX quotes ````` `` ````` and ``''`` become ``"``;
* pieces ending in ``<digit>,`` are split into number pieces and a separate ``,`` piece.
"""

import unicodedata
from typing import Dict, List, Union

from bert_tf.errors import ConfigError

SPIECE_UNDERLINE = "\u2581"  # '▁', SentencePiece's word-start marker.

# Special symbols of the released XLNet SentencePiece model (original data_utils.special_symbols).
special_symbols: Dict[str, int] = {
    "<unk>": 0,
    "<s>": 1,
    "</s>": 2,
    "<cls>": 3,
    "<sep>": 4,
    "<pad>": 5,
    "<mask>": 6,
    "<eod>": 7,
    "<eop>": 8,
}
VOCAB_SIZE = 32000
UNK_ID = special_symbols["<unk>"]
CLS_ID = special_symbols["<cls>"]
SEP_ID = special_symbols["<sep>"]
MASK_ID = special_symbols["<mask>"]
EOD_ID = special_symbols["<eod>"]
# Not constants of the original module, but the ids it hard-codes elsewhere.
PAD_ID = special_symbols["<pad>"]  # never used for padding: all runners pad with id 0.
EOP_ID = special_symbols["<eop>"]


def preprocess_text(inputs: Union[str, bytes], lower: bool = False, remove_space: bool = True,
                    keep_accents: bool = False) -> str:
    """Normalises raw text before SentencePiece, as the original ``preprocess_text``.

    Steps, in order (spec 5.1): (1) if ``remove_space``, strip and collapse every whitespace
    run (``str.split()`` whitespace, e.g. NBSP, U+3000, U+2028) to one space; (2) replace
    ````` `` ````` and ``''`` by ``"``; (3) bytes are decoded as UTF-8 (the original's Python 2
    branch); (4) unless ``keep_accents``, NFKD-normalise and drop combining characters;
    (5) if ``lower``, lower-case.

    Args:
      inputs: the raw text (``str``, or UTF-8 ``bytes``).
      lower: lower-case (``FLAGS.uncased`` in the runners).
      remove_space: collapse whitespace.
      keep_accents: skip the NFKD/combining-mark removal.

    Returns:
      The normalised ``str``.

    Raises:
      UnicodeDecodeError: ``inputs`` is bytes that are not UTF-8.
    """
    if isinstance(inputs, bytes):
        inputs = inputs.decode("utf-8")
    if remove_space:
        outputs = " ".join(inputs.strip().split())
    else:
        outputs = inputs
    outputs = outputs.replace("``", '"').replace("''", '"')
    if not keep_accents:
        outputs = unicodedata.normalize("NFKD", outputs)
        outputs = "".join(c for c in outputs if not unicodedata.combining(c))
    if lower:
        outputs = outputs.lower()
    return outputs


def encode_pieces(sp_model, text: str, return_unicode: bool = True, sample: bool = False,
                  keep_added_underline: bool = False) -> List[str]:
    """SentencePiece pieces of ``text`` with the original's digit-comma fix-up.

    Mirrors ``prepro_utils.encode_pieces`` (spec 5.2): pieces come from
    ``EncodeAsPieces(text)`` (or ``SampleEncodeAsPieces(text, 64, 0.1)`` when ``sample``). Every
    piece longer than one character that ends in ``,`` preceded by a digit is re-encoded
    without the comma and without any ``▁``; if the original piece did not start with ``▁``
    but the first re-encoded piece does, that ``▁`` is removed (the piece dropped if it was a
    bare ``▁``); then a separate ``,`` piece follows. All other pieces are kept.

    Args:
      sp_model: a loaded ``sentencepiece.SentencePieceProcessor``.
      text: already preprocessed text (see :func:`preprocess_text`).
      return_unicode: kept for the original signature; pieces are always ``str`` in Python 3.
      sample: use subword sampling (nbest 64, alpha 0.1).
      keep_added_underline: skip the removal of the added ``▁`` (ALBERT's
        ``tokenization.encode_pieces``, whose removal branch compares ``str`` with ``bytes``
        and so never runs; its golden README, surprise 3).

    Returns:
      list of piece strings.
    """
    del return_unicode  # Python 3: pieces are already str.
    if sample:
        pieces = sp_model.SampleEncodeAsPieces(text, 64, 0.1)
    else:
        pieces = sp_model.EncodeAsPieces(text)
    new_pieces = []
    for piece in pieces:
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            cur_pieces = sp_model.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, ""))
            if (not keep_added_underline and piece[0] != SPIECE_UNDERLINE and cur_pieces
                    and cur_pieces[0][0] == SPIECE_UNDERLINE):
                if len(cur_pieces[0]) == 1:
                    cur_pieces = cur_pieces[1:]
                else:
                    cur_pieces[0] = cur_pieces[0][1:]
            cur_pieces.append(piece[-1])
            new_pieces.extend(cur_pieces)
        else:
            new_pieces.append(piece)
    return new_pieces


def encode_ids(sp_model, text: str, sample: bool = False) -> List[int]:
    """Ids of :func:`encode_pieces` (``PieceToId`` of each piece); original ``encode_ids``.

    Returns:
      list of int ids (``<unk>`` = 0 for pieces outside the vocabulary).
    """
    return [sp_model.PieceToId(piece) for piece in encode_pieces(sp_model, text, sample=sample)]


def load_sp_model(path: str):
    """Loads a SentencePiece model file (``spiece.model``).

    A local path goes to SentencePiece's own ``Load`` (the original's ``sp.Load``); a remote
    one (``gs://``, ``ram://``: anything with ``://``) is read whole through ``tf.io.gfile``
    and given to ``LoadFromSerializedProto`` (bert_tf: the original could only read a local
    model file).

    Returns:
      a ``sentencepiece.SentencePieceProcessor``.

    Raises:
      ConfigError: the file is missing or is not a SentencePiece model (names the path).
    """
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor()
    try:
        if "://" in path:
            import tensorflow as tf  # only for remote file systems
            if not tf.io.gfile.exists(path):
                raise ConfigError(f"{path}: cannot load SentencePiece model (no such file)")
            with tf.io.gfile.GFile(path, "rb") as f:
                proto = f.read()
            ok = sp.LoadFromSerializedProto(proto)
        else:
            ok = sp.Load(path)
    except ConfigError:
        raise
    except Exception as e:  # OSError, RuntimeError; tf.errors.OpError for remote paths
        raise ConfigError(f"{path}: cannot load SentencePiece model ({_load_error(e)})") from e
    if not ok:
        raise ConfigError(f"{path}: cannot load SentencePiece model (not a SentencePiece model)")
    return sp


def _load_error(error: Exception) -> str:
    """SentencePiece's load error in a few words: ``no such file``, ``is a folder``, ``not a
    SentencePiece model`` (its ``INTERNAL: ... ParseFromArray ...`` line), else its text."""
    text = str(error).strip()
    if isinstance(error, FileNotFoundError) or text.startswith("NOT_FOUND"):
        return "no such file"
    if isinstance(error, IsADirectoryError) or "Is a directory" in text:
        return "is a folder"
    if "parse" in text.lower():
        return "not a SentencePiece model"
    return text


def tokenize_fn(sp_model, text: str, uncased: bool = False) -> List[int]:
    """``encode_ids(sp_model, preprocess_text(text, lower=uncased))``: the runners' tokenizer.

    Mirrors ``tokenize_fn`` of the original ``run_classifier.py`` (spec 5.4, golden
    ``classifier_features.jsonl``).
    """
    return encode_ids(sp_model, preprocess_text(text, lower=uncased))
