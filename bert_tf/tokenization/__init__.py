"""Text -> tokens: WordPiece for BERT (:mod:`bert_tf.tokenization.wordpiece`).

The WordPiece API of the original ``tokenization.py`` (spec ``bert.md`` section 4) is exported
here; ``bert_tf.bert.tokenization`` re-exports it under the original module name.
"""

from bert_tf.tokenization.wordpiece import *  # noqa: F401,F403
from bert_tf.tokenization.wordpiece import __all__  # noqa: F401
