"""The original run_squad.py window rules, restated independently of ``bert_tf.data.windows``
for the ``--doc_stride`` tests of extract_features and run_classifier (BERT and XLNet): the
expected windows and max-context owners those tests check our outputs against."""


def reference_spans(n, window, stride):
    """The original run_squad.py ``doc_spans`` loop, restated: ``(start, length)`` of each window
    of at most ``window`` of ``n`` tokens, the next starting ``min(length, stride)`` later."""
    spans, start = [], 0
    while start < n:
        length = min(n - start, window)
        spans.append((start, length))
        if start + length == n:
            break
        start += min(length, stride)
    return spans


def reference_owner(position, spans):
    """The original ``_check_is_max_context``, restated: the index of the best-scoring span
    (``min(left, right) + 0.01 * length``, the first on a tie) holding ``position``."""
    best_score, best = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if start <= position <= end:
            score = min(position - start, end - position) + 0.01 * length
            if best_score is None or score > best_score:
                best_score, best = score, index
    return best
