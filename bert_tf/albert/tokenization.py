"""ALBERT's `tokenization.py`: WordPiece or SentencePiece behind one `FullTokenizer`, no TF-Hub.

It sits at the bottom level (with WordPiece and XLNet's SentencePiece helpers) so that the
data layer (``bert_tf.albert.data.pretraining``, the ALBERT classifier features) can use it;
``bert_tf.albert.tokenization`` re-exports it under the original module name.

Mirrors the original google-research/albert `tokenization.py` (golden README section A and
"Surprises" 1-3), run under Python 3:

* ``FullTokenizer(vocab_file, do_lower_case=True, spm_model_file=None)``: with a (non-empty)
  ``spm_model_file`` it is a SentencePiece tokenizer that **ignores** ``do_lower_case`` and
  never normalises (callers apply :func:`preprocess_text` themselves); otherwise it is BERT's
  WordPiece tokenizer (`bert_tf.tokenization.wordpiece`) over ALBERT's :func:`load_vocab`.
* :func:`preprocess_text` differs from XLNet's (`bert_tf.tokenization.sentencepiece_prepro`):
  no LaTeX-quote replacement and no ``keep_accents`` switch.
* :func:`encode_pieces` splits a ``<digit>,`` piece into the re-encoded number and ``","``,
  and, because the original compares a ``str`` piece with the **bytes** ``SPIECE_UNDERLINE``,
  never removes the ``▁`` that re-encoding adds: ``"1990,"`` becomes ``"▁1990", ","`` even
  when the original piece had no ``▁``.
* The original imports `tensorflow_hub` at module level; this module does not, and
  ``from_hub_module`` raises a clear error.

The WordPiece helpers of the original module (`BasicTokenizer`, `WordpieceTokenizer`,
`convert_to_unicode`, `printable_text`, `convert_by_vocab`, ...) are BERT's and are
re-exported from `bert_tf.tokenization.wordpiece`.
"""

import collections
import unicodedata
from typing import Iterable, List, Optional, Union

from bert_tf.errors import ConfigError
from bert_tf.tokenization import sentencepiece_prepro
from bert_tf.tokenization.wordpiece import (BasicTokenizer, WordpieceTokenizer, convert_by_vocab,
                                            convert_ids_to_tokens, convert_to_unicode,
                                            convert_tokens_to_ids, printable_text,
                                            whitespace_tokenize)

__all__ = [
    "SPIECE_UNDERLINE", "BasicTokenizer", "FullTokenizer", "WordpieceTokenizer",
    "convert_by_vocab", "convert_ids_to_tokens", "convert_to_unicode", "convert_tokens_to_ids",
    "encode_ids", "encode_pieces", "load_vocab", "preprocess_text", "printable_text",
    "whitespace_tokenize",
]

# The original's word-start marker is the UTF-8 *bytes* of "▁" (see encode_pieces).
SPIECE_UNDERLINE = "\u2581".encode("utf-8")


def preprocess_text(inputs: Union[str, bytes], remove_space: bool = True,
                    lower: bool = False) -> str:
    """Normalises text before SentencePiece, as the original ALBERT ``preprocess_text``.

    Steps: (1) if ``remove_space``, strip and collapse each whitespace run (``str.split()``
    whitespace) to one space; (2) NFKD, then drop combining characters (accents; also folds
    compatibility characters, e.g. full-width -> ASCII); (3) if ``lower``, lower-case.

    Args:
      inputs: text, ``str`` (UTF-8 ``bytes`` are decoded: the original's Python 2 branch).
      remove_space: collapse whitespace.
      lower: lower-case (the GLUE processors pass ``do_lower_case``).

    Returns:
      the normalised ``str``.

    Raises:
      UnicodeDecodeError: ``inputs`` is bytes that are not UTF-8.
    """
    if isinstance(inputs, bytes):
        inputs = inputs.decode("utf-8")
    outputs = " ".join(inputs.strip().split()) if remove_space else inputs
    outputs = unicodedata.normalize("NFKD", outputs)
    outputs = "".join(c for c in outputs if not unicodedata.combining(c))
    if lower:
        outputs = outputs.lower()
    return outputs


def encode_pieces(sp_model, text: Union[str, bytes], return_unicode: bool = True,
                  sample: bool = False) -> List[str]:
    """SentencePiece pieces of ``text`` with the original ALBERT digit-comma rule.

    Pieces come from ``EncodeAsPieces(text)`` (``SampleEncodeAsPieces(text, 64, 0.1)`` when
    ``sample``). A piece longer than one character that ends in ``,`` after a digit is
    replaced by ``EncodeAsPieces(piece[:-1] without any "▁")`` followed by ``","``. The
    original's "drop the added leading ▁" branch compares ``str`` with ``bytes`` and so never
    runs; it is left out here, with the same result (golden README surprise 3).

    Args:
      sp_model: a loaded ``sentencepiece.SentencePieceProcessor``.
      text: the text as given (not normalised here).
      return_unicode: kept for the original signature (pieces are ``str`` in Python 3).
      sample: subword sampling (nbest 64, alpha 0.1).

    Returns:
      list of piece strings.
    """
    return [printable_text(p) for p in sentencepiece_prepro.encode_pieces(
        sp_model, printable_text(text), return_unicode, sample, keep_added_underline=True)]


def encode_ids(sp_model, text: Union[str, bytes], sample: bool = False) -> List[int]:
    """``PieceToId`` of each piece of :func:`encode_pieces` (original ``encode_ids``).

    Returns:
      list of int ids (0 = ``<unk>`` for a piece outside the model).
    """
    return [sp_model.PieceToId(piece) for piece in encode_pieces(sp_model, text, sample=sample)]


def _read_bytes(path: str) -> bytes:
    """Whole file; ``tf.io.gfile`` for URLs (gs://...), plain ``open`` otherwise."""
    if "://" in path:
        import tensorflow as tf  # only for remote file systems
        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def load_vocab(vocab_file: str) -> "collections.OrderedDict[str, int]":
    """Loads a vocab file into an ordered dict token -> id, as the original ALBERT ``load_vocab``.

    Unlike BERT's: the token is the first whitespace-separated field of the line (so a
    SentencePiece ``.vocab`` file with scores also loads), a blank line is the token ``" "``,
    and a repeated token keeps its first id without using a new one (ids stay dense).

    Raises:
      ConfigError: the file is missing or unreadable, or a line is not UTF-8 (names the path
        and the line).
    """
    try:
        data = _read_bytes(vocab_file)
    except Exception as e:  # OSError locally, tf.errors.* remotely
        raise ConfigError(f"cannot read vocab file {vocab_file!r}: {e}") from e
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # nothing after the last "\n": end of file, not a line
    vocab = collections.OrderedDict()
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ConfigError(
                f"vocab file {vocab_file!r} line {number} is not valid UTF-8: {e}") from e
        token = line.strip().split()[0] if line.strip() else " "
        if token not in vocab:
            vocab[token] = len(vocab)
    return vocab


def load_sp_model(spm_model_file: str):
    """Loads a SentencePiece model (the original read its bytes via gfile):
    :func:`bert_tf.tokenization.sentencepiece_prepro.load_sp_model`, XLNet's loader.

    Returns:
      a ``sentencepiece.SentencePieceProcessor``.

    Raises:
      ConfigError: the file is missing, unreadable, or not a SentencePiece model (names it).
    """
    from bert_tf.tokenization.sentencepiece_prepro import load_sp_model as load

    return load(spm_model_file)


class FullTokenizer:
    """End-to-end ALBERT tokenization (original ALBERT ``FullTokenizer``).

    Args:
      vocab_file: WordPiece vocab (used only without ``spm_model_file``).
      do_lower_case: WordPiece only: lower-case and strip accents. Ignored with SentencePiece,
        as in the original (apply :func:`preprocess_text` with ``lower=`` before tokenizing).
      spm_model_file: a SentencePiece model; an empty string or None selects WordPiece (the
        original's ``--spm_model_file=`` behaviour).

    Attributes:
      vocab: token -> id (SentencePiece: ``{IdToPiece(i): i}`` over the whole model);
      inv_vocab: id -> token; sp_model: the SentencePiece processor or None;
      basic_tokenizer / wordpiece_tokenizer: WordPiece path only.

    Raises:
      ConfigError: the vocab or the SentencePiece model cannot be read.
    """

    def __init__(self, vocab_file: Optional[str], do_lower_case: bool = True,
                 spm_model_file: Optional[str] = None):
        self.vocab = None
        self.sp_model = None
        if spm_model_file:
            self.sp_model = load_sp_model(spm_model_file)
            self.vocab = {self.sp_model.IdToPiece(i): i
                          for i in range(self.sp_model.GetPieceSize())}
        else:
            if not vocab_file:
                raise ConfigError("FullTokenizer needs a vocab_file or an spm_model_file")
            self.vocab = load_vocab(vocab_file)
            self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
            self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}

    @classmethod
    def from_scratch(cls, vocab_file, do_lower_case, spm_model_file):
        """The original's alternate constructor: ``FullTokenizer(...)``."""
        return cls(vocab_file, do_lower_case, spm_model_file)

    @classmethod
    def from_hub_module(cls, hub_module, use_spm=True):
        """Not supported: bert_tf has no TF-Hub dependency.

        Raises:
          ConfigError: always, naming the module and what to pass instead.
        """
        raise ConfigError(
            f"TF-Hub module {hub_module!r}: TF-Hub is not supported; pass the module's vocab "
            f"file as spm_model_file (or vocab_file for WordPiece) instead")

    def tokenize(self, text: Union[str, bytes]) -> List[str]:
        """Text -> tokens: SentencePiece pieces (:func:`encode_pieces`, no normalisation), or
        BasicTokenizer + WordPiece pieces."""
        if self.sp_model:
            return encode_pieces(self.sp_model, text, return_unicode=False)
        split_tokens = []
        for token in self.basic_tokenizer.tokenize(text):
            split_tokens.extend(self.wordpiece_tokenizer.tokenize_word(token))
        return split_tokens

    def convert_tokens_to_ids(self, tokens: Iterable[str]) -> List[int]:
        """Tokens -> ids. SentencePiece: ``PieceToId``, so a token outside the model (e.g.
        ``[CLS]``, ``[SEP]``, ``[MASK]`` with a model lacking them) is 0 = ``<unk>``.
        WordPiece: vocab lookup; an unknown token raises ``UnknownTokenError`` (a KeyError)."""
        if self.sp_model:
            return [self.sp_model.PieceToId(printable_text(token)) for token in tokens]
        return convert_tokens_to_ids(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids: Iterable[int]) -> List[str]:
        """Ids -> tokens (SentencePiece ``IdToPiece``, or the inverted WordPiece vocab).

        Raises:
          IndexError: SentencePiece id out of range. UnknownTokenError (a KeyError): WordPiece
            id not in the vocab.
        """
        if self.sp_model:
            return [self.sp_model.IdToPiece(id_) for id_ in ids]
        return convert_ids_to_tokens(self.inv_vocab, ids)
