"""The original ALBERT ``tokenization.py`` module name: ``from bert_tf.albert import tokenization``.

Re-exports :mod:`bert_tf.tokenization.albert_tokenization` (WordPiece or SentencePiece behind
one ``FullTokenizer``, ``preprocess_text``, ``encode_pieces``, ``encode_ids``, no TF-Hub; golden
README ``albert`` section A), so code written against the original works unchanged::

    tokenizer = tokenization.FullTokenizer(None, spm_model_file="30k-clean.model")
    ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(
        tokenization.preprocess_text("Hello, world!", lower=True)))
"""

from bert_tf.tokenization.albert_tokenization import *  # noqa: F401,F403
from bert_tf.tokenization.albert_tokenization import __all__  # noqa: F401
from bert_tf.tokenization.albert_tokenization import load_sp_model  # noqa: F401
