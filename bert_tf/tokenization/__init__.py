"""Text -> tokens: WordPiece for BERT (:mod:`bert_tf.tokenization.wordpiece`).

The WordPiece API of the original ``tokenization.py`` (spec ``bert.md`` section 4) is exported
here; ``bert_tf.bert.tokenization`` re-exports it under the original module name.
"""

from bert_tf.tokenization.wordpiece import (
    BasicTokenizer,
    CaseMismatchError,
    FullTokenizer,
    UnknownTokenError,
    WordpieceTokenizer,
    check_vocab_matches_case,
    convert_by_vocab,
    convert_ids_to_tokens,
    convert_to_unicode,
    convert_tokens_to_ids,
    load_vocab,
    printable_text,
    validate_case_matches_checkpoint,
    vocab_looks_cased,
    whitespace_tokenize,
)
