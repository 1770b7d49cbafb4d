"""Raw-text SavedModel of BERT ``run_squad.py`` (``--export_dir``; issue 12, deliverable 2).

``serving_default`` takes tf.string ``question`` and ``context`` ``[batch]`` and does, in the
graph, what ``--do_predict`` does in Python for one question per paragraph:

1. ``read_squad_examples``: the context split on runs of the SQuAD reader's whitespace (space,
   tab, CR, LF, U+202F) into ``doc_tokens``;
2. ``convert_examples_to_features``: the question's pieces cut to ``max_query_length``; each
   doc token's pieces on their own (``BertTextPreprocessor.word_piece_ids_of_words``) giving
   ``all_doc_tokens`` and ``tok_to_orig_index``; windows of ``max_seq_length - len(query) - 3``
   pieces every ``doc_stride`` pieces (``make_doc_spans``), each packed as
   ``[CLS] query [SEP] window [SEP]``, and the max-context flag of every window piece
   (``_check_is_max_context``, float64 scores as Python's);
3. the model on every window of every question at once;
4. ``write_predictions``: per window the top ``n_best_size`` start and end positions
   (``tf.math.top_k``: ties to the lower index, as the original's stable sort); a pair is kept
   when both are in the window's document part, the start is max-context, ``start <= end``
   and it is at most ``max_answer_length`` pieces; the best pair over the question's windows
   by ``start_logit + end_logit`` summed in float64 (first in window, start-rank, end-rank
   order on ties: the original's stable sort of the prelim list);
5. the answer: ``orig_text`` (the doc tokens of the span joined by " ") trimmed by
   ``get_final_text`` exactly: the span's pieces de-tokenized (``" ##"``, ``"##"`` removed,
   spaces squeezed) are searched (first occurrence, code points) in the basic-tokenized
   ``orig_text`` joined by " "; the first and last characters are mapped back through the
   space-free alignment; when the text is not found or the space-free lengths differ,
   ``orig_text`` itself, as the original.

Outputs: ``answer_text`` tf.string ``[batch]`` (predictions.json's text: v1 the best span,
"empty" when no span is valid; v2 "" when ``null_score - answer_score >
null_score_diff_threshold`` or no span is valid), ``answer_score`` float32 ``[batch]`` (the best
span's start + end logit; 0 when none), ``null_score`` float32 ``[batch]`` (min over windows of
the [CLS] start + end logit, the original's ``score_null``; v2 only, else 0). ``serving_ids``
takes int32 ``input_ids``, ``input_mask``, ``segment_ids`` ``[batch, seq]`` (features made by the
caller) and returns the float32 ``start_logits``, ``end_logits`` ``[batch, seq]``.
"""

from typing import Dict, NamedTuple

import tensorflow as tf

from bert_tf.run import serving

QUESTION, CONTEXT = "question", "context"
_SQUAD_WHITESPACE = "[ \t\r\n\u202f]"  # bert_tf.data.squad.is_whitespace
_NO_AUTOGRAPH = tf.autograph.experimental.do_not_convert


class SquadAnswerer(tf.Module):
    """Question + context strings -> answer text and scores, the original's pipeline in TF ops.

    Args:
      model: a built ``BertSquad`` (features dict -> float32 ``start_logits``, ``end_logits``
        ``[N, max_seq_length]``).
      preprocessor: a ``BertTextPreprocessor`` (the run's vocab and ``do_lower_case``).
      vocab_tokens: the token of each id (list of str, index = id).
      max_seq_length, doc_stride, max_query_length, n_best_size, max_answer_length: the flags
        (already validated by ``check_args``: ``doc_stride <= max_seq_length -
        max_query_length - 3``).
      version_2_with_negative, null_score_diff_threshold: the v2 flags.
    """

    def __init__(self, model, preprocessor, vocab_tokens, max_seq_length: int, doc_stride: int,
                 max_query_length: int, n_best_size: int, max_answer_length: int,
                 version_2_with_negative: bool, null_score_diff_threshold: float):
        super().__init__(name="squad_answerer")
        self.model = model
        self.preprocessor = preprocessor
        self.vocab = tf.constant(vocab_tokens, tf.string)
        self.seq = int(max_seq_length)
        self.stride = int(doc_stride)
        self.max_query = int(max_query_length)
        self.n_best = min(int(n_best_size), self.seq)
        self.n_best_flag = int(n_best_size)
        self.max_answer = int(max_answer_length)
        self.v2 = bool(version_2_with_negative)
        self.threshold = float(null_score_diff_threshold)

    @_NO_AUTOGRAPH
    def answer(self, question: tf.Tensor, context: tf.Tensor) -> Dict[str, tf.Tensor]:
        """``question``, ``context`` tf.string ``[B]`` -> dict ``answer_text`` tf.string ``[B]``,
        ``answer_score``, ``null_score`` float32 ``[B]`` (see the module docstring)."""
        pre = self.preprocessor
        words, doc, tok_to_orig = self._doc_pieces(context)
        query = pre.word_piece_ids(question)[:, :self.max_query]             # [B, (Q)]
        win = self._windows(query, doc)
        input_ids, input_mask, segment_ids = self._window_features(win, query, doc)
        out = self.model({"input_ids": input_ids, "input_mask": input_mask,
                          "segment_ids": segment_ids}, training=False)
        start_logits = tf.cast(out["start_logits"], tf.float32)
        end_logits = tf.cast(out["end_logits"], tf.float32)
        is_max = self._max_context(win)
        span = self._best_span(win, start_logits, end_logits, is_max, question)
        has, best, answer_score = span.has, span.best, span.answer_score

        null = tf.cast(start_logits[:, 0], tf.float64) + tf.cast(end_logits[:, 0], tf.float64)
        null_score = tf.math.unsorted_segment_min(null, win.win_b, span.batch_size)
        null_score = tf.where(win.n_win > 0, null_score, 1000000.0)  # the original's initial value

        final = self._span_text(words, doc, tok_to_orig, win, span)
        if self.v2:
            has_non_null = has
            if self.n_best_flag == 1:  # the null entry alone fills the n-best list
                has_non_null = has & ~(null_score > best)
            diff = tf.where(has_non_null, null_score - answer_score, null_score)
            text = tf.where(has_non_null & ~(diff > self.threshold), final, "")
        else:
            text = tf.where(has, final, "empty")
            null_score = tf.zeros_like(null_score)
        return {"answer_text": text, "answer_score": tf.cast(answer_score, tf.float32),
                "null_score": tf.cast(null_score, tf.float32)}

    def _doc_pieces(self, context: tf.Tensor):
        """Steps 1-2: the context's words tf.string ``[B, (W)]`` (split on the SQuAD reader's
        whitespace), their pieces int ``[B, (T)]`` (``all_doc_tokens``) and the word of each
        piece int32 ``[B, (T)]`` (``tok_to_orig_index``)."""
        pre = self.preprocessor
        words = tf.strings.split(tf.strings.regex_replace(context, _SQUAD_WHITESPACE, " "), " ")
        words = tf.ragged.boolean_mask(words, words != "")                   # [B, (W)]
        pieces = pre.word_piece_ids_of_words(words)                          # [B, (W), (P)]
        doc = pieces.merge_dims(1, 2)                                        # [B, (T)]
        global_word = pieces.values.value_rowids()
        local_word = global_word - tf.gather(pieces.row_splits,
                                             tf.gather(pieces.value_rowids(), global_word))
        tok_to_orig = doc.with_flat_values(tf.cast(local_word, tf.int32))   # [B, (T)]
        return words, doc, tok_to_orig

    def _windows(self, query: tf.RaggedTensor, doc: tf.RaggedTensor) -> "_Windows":
        """Step 2, ``make_doc_spans`` of every question at once: the :class:`_Windows`."""
        S = self.seq
        q_len = tf.cast(query.row_lengths(), tf.int32)
        t_len = tf.cast(doc.row_lengths(), tf.int32)
        max_doc = S - q_len - 3                                              # [B]
        # make_doc_spans: starts 0, stride, ... until a window reaches the end (none if T=0).
        n_win = tf.where(t_len <= 0, 0, tf.where(
            t_len <= max_doc, 1, 1 + (t_len - max_doc + self.stride - 1) // self.stride))
        win_b = tf.repeat(tf.range(tf.size(n_win)), n_win)                   # [N]
        win_k = tf.ragged.range(n_win).flat_values                           # [N]
        win_start = win_k * self.stride
        win_len = tf.minimum(tf.gather(t_len, win_b) - win_start, tf.gather(max_doc, win_b))
        wq = tf.gather(q_len, win_b)[:, None]
        pos = tf.range(S)[None, :]                                           # [1, S]
        doc_off = pos - wq - 2                                               # doc index in window
        in_doc = (doc_off >= 0) & (doc_off < win_len[:, None])               # [N, S]
        doc_index = tf.clip_by_value(win_start[:, None] + doc_off, 0, tf.int32.max)
        return _Windows(t_len, max_doc, n_win, win_b, win_k, win_start, win_len, wq, pos,
                        in_doc, doc_index)

    def _window_features(self, win: "_Windows", query: tf.RaggedTensor, doc: tf.RaggedTensor):
        """Step 2, each window packed as ``[CLS] query [SEP] window [SEP]``: int32
        ``input_ids``, ``input_mask``, ``segment_ids`` ``[N, max_seq_length]``."""
        pre = self.preprocessor
        pos, wq, win_b = win.pos, win.wq, win.win_b
        doc_dense = doc.to_tensor(0)
        doc_dense = tf.pad(doc_dense, [[0, 0], [0, 1]])  # at least one column
        last_col = tf.shape(doc_dense)[1] - 1
        doc_ids = tf.gather(tf.gather(doc_dense, win_b), tf.minimum(win.doc_index, last_col),
                            batch_dims=1)
        query_dense = tf.pad(query.to_tensor(0), [[0, 0], [0, 1]])
        q_ids = tf.gather(tf.gather(query_dense, win_b),
                          tf.clip_by_value(pos - 1 + 0 * wq, 0, tf.shape(query_dense)[1] - 1),
                          batch_dims=1)
        length = wq + 3 + win.win_len[:, None]
        is_sep = (pos == wq + 1) | (pos == length - 1)
        input_ids = tf.where(pos == 0, pre.cls_id, tf.where(is_sep, pre.sep_id, tf.where(
            (pos >= 1) & (pos <= wq), q_ids, tf.where(win.in_doc, doc_ids, 0))))
        input_mask = tf.cast(pos < length, tf.int32)
        segment_ids = tf.cast((pos >= wq + 2) & (pos < length), tf.int32)
        return input_ids, input_mask, segment_ids

    def _max_context(self, win: "_Windows") -> tf.Tensor:
        """Step 2, ``_check_is_max_context`` of each window position against the question's
        windows (float64 scores as Python's; the first max): bool ``[N, S]``."""
        win_b, doc_index = win.win_b, win.doc_index
        # _check_is_max_context of each window position against the question's windows.
        k_max = tf.maximum(tf.reduce_max(tf.concat([win.n_win, [0]], 0)), 1)
        k_range = tf.range(k_max)
        other_valid = k_range[None, :] < tf.gather(win.n_win, win_b)[:, None]  # [N, K]
        o_start = k_range[None, :] * self.stride
        o_len = tf.minimum(tf.gather(win.t_len, win_b)[:, None] - o_start,
                           tf.gather(win.max_doc, win_b)[:, None])           # [N, K]
        p = doc_index[:, :, None]                                            # [N, S, 1]
        o_start3, o_len3 = o_start[:, None, :], o_len[:, None, :]
        o_end3 = o_start3 + o_len3 - 1
        holds = other_valid[:, None, :] & (p >= o_start3) & (p <= o_end3)    # [N, S, K]
        score = (tf.cast(tf.minimum(p - o_start3, o_end3 - p), tf.float64)
                 + 0.01 * tf.cast(o_len3, tf.float64))
        score = tf.where(holds, score, tf.constant(-1e300, tf.float64))
        best_k = tf.argmax(score, axis=-1, output_type=tf.int32)             # first max
        return win.in_doc & (best_k == win.win_k[:, None])                   # [N, S]

    def _best_span(self, win: "_Windows", start_logits: tf.Tensor, end_logits: tf.Tensor,
                   is_max: tf.Tensor, question: tf.Tensor) -> "_BestSpan":
        """Step 4, ``write_predictions``' candidates: the top ``n_best_size`` starts x ends
        of each window, the valid pairs, and the best one of each question (the
        :class:`_BestSpan`)."""
        in_doc, win_b = win.in_doc, win.win_b
        # Candidates: top n_best starts x top n_best ends per window.
        k = self.n_best
        s_val, s_idx = tf.math.top_k(start_logits, k)                         # [N, k]
        e_val, e_idx = tf.math.top_k(end_logits, k)
        s_ok = tf.gather(in_doc & is_max, s_idx, batch_dims=1)
        e_ok = tf.gather(in_doc, e_idx, batch_dims=1)
        si, ei = s_idx[:, :, None], e_idx[:, None, :]
        valid = (s_ok[:, :, None] & e_ok[:, None, :] & (ei >= si)
                 & (ei - si + 1 <= self.max_answer))                          # [N, k, k]
        total = (tf.cast(s_val, tf.float64)[:, :, None] + tf.cast(e_val, tf.float64)[:, None, :])
        neg = tf.constant(-float("inf"), tf.float64)
        flat_total = tf.reshape(tf.where(valid, total, neg), [-1])
        flat_valid = tf.reshape(valid, [-1])
        B = tf.shape(question)[0]
        cand_b = tf.repeat(win_b, k * k)
        best = tf.math.unsorted_segment_max(flat_total, cand_b, B)           # [B]
        has = tf.math.unsorted_segment_max(tf.cast(flat_valid, tf.int32), cand_b, B) > 0
        idx = tf.range(tf.size(flat_total))
        hit = flat_valid & (flat_total == tf.gather(best, cand_b))
        first = tf.math.unsorted_segment_min(tf.where(hit, idx, tf.int32.max), cand_b, B)
        first = tf.where(has, first, 0)
        b_win = first // (k * k)
        # a 0 after the N * k real entries, read where no span is valid (N may be 0)
        flat_s = tf.concat([tf.reshape(s_idx, [-1]), [0]], 0)                 # [N * k + 1]
        flat_e = tf.concat([tf.reshape(e_idx, [-1]), [0]], 0)
        none = tf.size(flat_s) - 1
        b_s = tf.gather(flat_s, tf.where(has, b_win * k + (first % (k * k)) // k, none))
        b_e = tf.gather(flat_e, tf.where(has, b_win * k + first % k, none))
        answer_score = tf.where(has, best, 0.0)
        return _BestSpan(B, has, best, b_win, b_s, b_e, answer_score)

    def _span_text(self, words, doc, tok_to_orig, win: "_Windows", span: "_BestSpan"
                   ) -> tf.Tensor:
        """Step 5, the answer text of each question's best span: its words joined by " "
        trimmed by ``get_final_text`` (:func:`_final_text`), tf.string ``[B]`` (a dummy where
        no span is valid)."""
        pre = self.preprocessor
        has, b_win, b_s, b_e = span.has, span.b_win, span.b_s, span.b_e
        # The span's doc pieces and words (a dummy span where none is valid).
        # One dummy window after the N real ones: a batch without any window (every context
        # empty or whitespace) still gathers (was: "indices[0] = 0 is not in [0, 0)").
        safe_win = tf.where(has, b_win, tf.size(win.win_b))
        win_start = tf.concat([win.win_start, [0]], 0)                        # [N + 1]
        win_q = tf.concat([win.wq[:, 0], [0]], 0)
        b_start = tf.where(has, tf.gather(win_start, safe_win) + b_s
                           - tf.gather(win_q, safe_win) - 2, 0)
        b_end = tf.where(has, b_start + b_e - b_s, -1)  # an empty span where none is valid
        tok_dense = tf.pad(tok_to_orig.to_tensor(0), [[0, 0], [0, 1]])
        orig_start = tf.gather(tok_dense, b_start[:, None], batch_dims=1)[:, 0]
        orig_end = tf.where(has, tf.gather(tok_dense, tf.maximum(b_end, 0)[:, None],
                                           batch_dims=1)[:, 0], orig_start - 1)
        w_range = tf.ragged.range(orig_start, orig_end + 1)
        word_at = w_range + tf.cast(words.row_starts(), tf.int32)[:, None]
        orig_text = tf.strings.reduce_join(tf.gather(words.values, word_at), axis=1,
                                           separator=" ")
        p_range = tf.ragged.range(b_start, b_end + 1) + tf.cast(doc.row_starts(), tf.int32)[:, None]
        span_tokens = tf.gather(self.vocab, tf.gather(doc.values, p_range))
        tok_text = tf.strings.reduce_join(span_tokens, axis=1, separator=" ")
        tok_text = tf.strings.regex_replace(tok_text, " ##", "")
        tok_text = tf.strings.regex_replace(tok_text, "##", "")
        tok_text = tf.strings.reduce_join(
            tf.ragged.boolean_mask(*(lambda s: (s, s != ""))(tf.strings.split(tok_text, " "))),
            axis=1, separator=" ")
        basic = tf.strings.reduce_join(pre.basic_tokens(orig_text), axis=1, separator=" ")
        return tf.map_fn(lambda x: _final_text(x[0], x[1], x[2]),
                         (tok_text, orig_text, basic), fn_output_signature=tf.string)


class _Windows(NamedTuple):
    """The windows of every question of a batch (``make_doc_spans`` in TF ops; ``N`` windows,
    ``S = max_seq_length``).

    Attributes:
      t_len, max_doc, n_win: int32 ``[B]``: pieces of each context, window length, windows.
      win_b, win_k, win_start, win_len: int32 ``[N]``: each window's question, its index among
        that question's windows, its first doc piece and its length.
      wq: int32 ``[N, 1]``: the question length of each window.
      pos: int32 ``[1, S]``: the positions of a window.
      in_doc: bool ``[N, S]``: the positions in the window's document part.
      doc_index: int32 ``[N, S]``: the doc piece at each position (clipped, 0 outside).
    """
    t_len: tf.Tensor
    max_doc: tf.Tensor
    n_win: tf.Tensor
    win_b: tf.Tensor
    win_k: tf.Tensor
    win_start: tf.Tensor
    win_len: tf.Tensor
    wq: tf.Tensor
    pos: tf.Tensor
    in_doc: tf.Tensor
    doc_index: tf.Tensor


class _BestSpan(NamedTuple):
    """The best valid span of each question (``[B]`` each).

    Attributes:
      batch_size: int32 scalar ``B``.
      has: bool, whether the question has a valid span; best: float64, its summed logits
        (-inf when none); answer_score: float64, ``best`` or 0 when none.
      b_win, b_s, b_e: int32, its window (index into ``N``) and start/end positions there.
    """
    batch_size: tf.Tensor
    has: tf.Tensor
    best: tf.Tensor
    b_win: tf.Tensor
    b_s: tf.Tensor
    b_e: tf.Tensor
    answer_score: tf.Tensor


@_NO_AUTOGRAPH
def _final_text(pred_text, orig_text, tok_text):
    """``get_final_text`` on scalars (code points; ASCII space is the only space stripped)."""
    o = tf.strings.unicode_decode(orig_text, "UTF-8")
    t = tf.strings.unicode_decode(tok_text, "UTF-8")
    p = tf.strings.unicode_decode(pred_text, "UTF-8")
    n_t, m = tf.size(t), tf.size(p)
    n_pos = tf.maximum(n_t - m + 1, 0)
    starts = tf.range(n_pos)
    grid = starts[:, None] + tf.range(m)[None, :]
    match = tf.reduce_all(tf.equal(tf.gather(t, grid), p[None, :]), axis=1)  # [n_pos]
    found = tf.reduce_any(match) & (m > 0)
    start = tf.cast(tf.argmax(tf.concat([tf.cast(match, tf.int32), [0]], 0)), tf.int32)
    end = start + m - 1
    o_ns, t_ns = tf.not_equal(o, 32), tf.not_equal(t, 32)
    same = tf.equal(tf.reduce_sum(tf.cast(o_ns, tf.int32)), tf.reduce_sum(tf.cast(t_ns, tf.int32)))
    t_cum = tf.concat([[0], tf.cumsum(tf.cast(t_ns, tf.int32))], 0)   # non-spaces before i
    o_pos = tf.concat([tf.cast(tf.where(o_ns)[:, 0], tf.int32), [0]], 0)
    safe = lambda i: tf.clip_by_value(i, 0, tf.maximum(n_t - 1, 0))  # noqa: E731
    ok = found & same & tf.gather(tf.concat([t_ns, [False]], 0), safe(start)) & \
        tf.gather(tf.concat([t_ns, [False]], 0), safe(end))
    o_start = tf.gather(o_pos, tf.gather(t_cum, safe(start)))
    o_end = tf.gather(o_pos, tf.gather(t_cum, safe(end)))
    trimmed = tf.strings.substr(orig_text, o_start, tf.maximum(o_end - o_start + 1, 0),
                                unit="UTF8_CHAR")
    return tf.where(ok, trimmed, orig_text)


def export_squad_model(model, preprocessor, vocab_tokens, args, export_dir: str) -> str:
    """Writes the SavedModel (``serving_default``: question/context text; ``serving_ids``)
    under ``<export_dir>/<timestamp>/`` with :func:`bert_tf.run.serving.write_saved_model`.

    Args:
      model: the built ``BertSquad`` with the run's weights.
      preprocessor: ``BertTextPreprocessor`` of the run's vocab and case.
      vocab_tokens: token of each id.
      args: the run's ``SquadArgs`` (window, n-best and v2 flags).
      export_dir: the folder.

    Returns:
      The version folder written.

    Raises:
      FlagError: ``export_dir`` cannot be written.
    """
    answerer = SquadAnswerer(model, preprocessor, vocab_tokens, args.max_seq_length,
                             args.doc_stride, args.max_query_length, args.n_best_size,
                             args.max_answer_length, args.version_2_with_negative,
                             args.null_score_diff_threshold)
    text_spec = [tf.TensorSpec([None], tf.string, name=QUESTION),
                 tf.TensorSpec([None], tf.string, name=CONTEXT)]

    def ids(input_ids, input_mask, segment_ids):
        out = model({"input_ids": input_ids, "input_mask": input_mask,
                     "segment_ids": segment_ids}, training=False)
        return {"start_logits": tf.cast(out["start_logits"], tf.float32),
                "end_logits": tf.cast(out["end_logits"], tf.float32)}

    dtypes = {name: tf.int32 for name in ("input_ids", "input_mask", "segment_ids")}
    return serving.write_saved_model(
        export_dir, [model, preprocessor],
        [(serving.DEFAULT_SIGNATURE, answerer.answer, text_spec),
         (serving.IDS_SIGNATURE, ids, serving.id_specs(dtypes))])
