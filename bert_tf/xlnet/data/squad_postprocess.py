"""XLNet SQuAD answers from the beam-search head outputs (original XLNet ``run_squad.py``
``write_predictions``, spec ``xlnet.md`` 9.6).

Per question, over its windows: ``start_n_top`` starts x ``end_n_top`` ends scored by
``start_log_prob + end_log_prob``; a candidate is dropped when its start or end is at or past
``paragraph_len - 1`` (quirk kept: the last paragraph piece of a window can never be part of an
answer), its start is not max-context, ``end < start``, or it is longer than
``max_answer_length`` pieces. The prediction is **always** the best non-null text;
``null_odds`` holds ``min(cls_logits)`` over the windows (a logit, not a difference) and the
threshold search (:func:`bert_tf.data.squad_metrics.find_all_best_thresh_v2`) decides.
"""

import collections
from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence

from bert_tf.atomic_files import atomic_write_texts
from bert_tf.data import squad_metrics
from bert_tf.data.squad_postprocess import SquadPredictions, compute_softmax, to_json_text
from bert_tf.errors import InputDataError


@dataclass
class XLNetRawResult:
    """One window's head outputs (original XLNet ``RawResult``).

    Attributes:
      unique_id: the feature's id.
      start_top_log_probs, start_top_index: ``[start_n_top]`` (log-softmax over the masked
        start logits).
      end_top_log_probs, end_top_index: ``[start_n_top * end_n_top]``; entry ``i * end_n_top +
        j`` is the j-th end for the i-th start.
      cls_logits: the answerability logit (higher: more likely no answer).
    """

    unique_id: int
    start_top_log_probs: Sequence[float]
    start_top_index: Sequence[int]
    end_top_log_probs: Sequence[float]
    end_top_index: Sequence[int]
    cls_logits: float


def compute_predictions(examples: Sequence, features: Sequence,
                        results: Sequence[XLNetRawResult], n_best_size: int,
                        max_answer_length: int, start_n_top: int,
                        end_n_top: int) -> SquadPredictions:
    """Predictions, n-best lists and null odds (see the module doc).

    Args:
      examples: :class:`bert_tf.xlnet.data.squad.XLNetSquadExample` in order.
      features: their :class:`~bert_tf.xlnet.data.squad.XLNetSquadFeatures` (``example_index``
        set, as for prediction).
      results: one per feature (any order).

    Returns:
      :class:`~bert_tf.data.squad_postprocess.SquadPredictions` (``nbest`` entries:
      ``text, probability, start_log_prob, end_log_prob``).

    Raises:
      InputDataError: a feature without a result.
    """
    by_example = collections.defaultdict(list)
    for feature in features:
        by_example[feature.example_index].append(feature)
    by_id = {r.unique_id: r for r in results}
    predictions, nbest_all, null_odds = (collections.OrderedDict() for _ in range(3))
    for example_index, example in enumerate(examples):
        prelim = []
        score_null = 1000000  # large and positive
        windows = by_example[example_index]
        for feature_index, feature in enumerate(windows):
            result = by_id.get(feature.unique_id)
            if result is None:
                raise InputDataError(f"no prediction for feature {feature.unique_id} "
                                     f"(question {example.qas_id})")
            score_null = min(score_null, result.cls_logits)
            for i in range(start_n_top):
                start_log_prob = result.start_top_log_probs[i]
                start = int(result.start_top_index[i])
                for j in range(end_n_top):
                    end_log_prob = result.end_top_log_probs[i * end_n_top + j]
                    end = int(result.end_top_index[i * end_n_top + j])
                    if start >= feature.paragraph_len - 1 or end >= feature.paragraph_len - 1:
                        continue
                    if not feature.token_is_max_context.get(start, False) or end < start:
                        continue
                    if end - start + 1 > max_answer_length:
                        continue
                    prelim.append((start_log_prob + end_log_prob, feature_index, start, end,
                                   start_log_prob, end_log_prob))
        prelim.sort(key=lambda p: p[0], reverse=True)  # stable, as the original's sorted()
        seen, nbest = set(), []
        for _, feature_index, start, end, start_log_prob, end_log_prob in prelim:
            if len(nbest) >= n_best_size:
                break
            feature = windows[feature_index]
            text = example.paragraph_text[feature.tok_start_to_orig_index[start]:
                                          feature.tok_end_to_orig_index[end] + 1].strip()
            if text in seen:
                continue
            seen.add(text)
            nbest.append((text, start_log_prob, end_log_prob))
        if not nbest:
            nbest.append(("", -1e6, -1e6))
        probs = compute_softmax([s + e for _, s, e in nbest])
        nbest_all[example.qas_id] = [
            collections.OrderedDict([("text", text), ("probability", prob),
                                     ("start_log_prob", s), ("end_log_prob", e)])
            for (text, s, e), prob in zip(nbest, probs)]
        predictions[example.qas_id] = nbest[0][0]
        null_odds[example.qas_id] = score_null
    return SquadPredictions(predictions, nbest_all, null_odds)


def write_predictions(preds: SquadPredictions, prediction_file: str, nbest_file: str,
                      null_odds_file: str) -> None:
    """Writes the three JSON files as the original (``json.dumps(obj, indent=4) + "\\n"``),
    atomically and together (a full disk leaves all three as they were)."""
    atomic_write_texts([(prediction_file, to_json_text(preds.predictions)),
                        (nbest_file, to_json_text(preds.nbest)),
                        (null_odds_file, to_json_text(preds.null_odds))])


def evaluate(dataset: Sequence[Mapping], preds: SquadPredictions) -> Dict[str, float]:
    """The original's ``Result`` dict: ``find_all_best_thresh_v2`` over the dev set
    (``best_exact``/``best_f1`` in percent, ``has_ans_exact``/``has_ans_f1`` as fractions)."""
    qid_to_has_ans = squad_metrics.make_qid_to_has_ans(dataset)
    exact_raw, f1_raw = squad_metrics.get_raw_scores(dataset, preds.predictions)
    out: Dict[str, float] = {}
    squad_metrics.find_all_best_thresh_v2(out, preds.predictions, exact_raw, f1_raw,
                                          preds.null_odds, qid_to_has_ans)
    return out


def results_from_json_lines(lines) -> List[XLNetRawResult]:
    """:class:`XLNetRawResult` from JSON lines with the RawResult fields (extra keys ignored)."""
    import json

    fields = ("unique_id", "start_top_log_probs", "start_top_index", "end_top_log_probs",
              "end_top_index", "cls_logits")
    out = []
    for line in lines:
        d = json.loads(line)
        out.append(XLNetRawResult(**{k: d[k] for k in fields}))
    return out
