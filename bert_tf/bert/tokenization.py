"""The original ``tokenization.py`` module name: ``from bert_tf.bert import tokenization``.

Re-exports the WordPiece API of :mod:`bert_tf.tokenization.wordpiece` (spec ``bert.md``
section 4), including the private character-class helpers the original module had, so code
written against the original works unchanged::

    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("Hello, world!"))
"""

from bert_tf.tokenization.wordpiece import (  # noqa: F401
    BasicTokenizer,
    CaseMismatchError,
    FullTokenizer,
    UnknownTokenError,
    WordpieceTokenizer,
    _is_control,
    _is_punctuation,
    _is_whitespace,
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
