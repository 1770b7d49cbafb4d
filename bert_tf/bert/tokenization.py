"""The original ``tokenization.py`` module name: ``from bert_tf.bert import tokenization``.

Re-exports the WordPiece API of :mod:`bert_tf.tokenization.wordpiece` (spec ``bert.md``
section 4), including the private character-class helpers the original module had, so code
written against the original works unchanged::

    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("Hello, world!"))
"""

from bert_tf.tokenization.wordpiece import *  # noqa: F401,F403
from bert_tf.tokenization.wordpiece import __all__  # noqa: F401
from bert_tf.tokenization.wordpiece import is_control, is_punctuation, is_whitespace

# The original module's private character classes, under their original names.
_is_whitespace, _is_control, _is_punctuation = is_whitespace, is_control, is_punctuation
