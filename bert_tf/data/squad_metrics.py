"""Official SQuAD 1.1 / 2.0 metrics and the SQuAD 2.0 null-threshold search.

Written from the definitions of the official evaluation scripts (``evaluate-v1.1.py`` and
``evaluate-v2.0.py``) and of XLNet's ``squad_utils.find_best_thresh_v2`` /
``find_all_best_thresh_v2`` (spec ``xlnet.md`` 9.6; ``bert.md`` 9.5 for how ``null_odds.json`` is
used). Pure Python.

* :func:`normalize_answer`: lower case, drop ASCII punctuation, drop the articles a/an/the,
  collapse whitespace.
* Exact match and token F1 are each taken as the maximum over the gold answers.
* v1.1 and v2.0 differ on empty token lists: v1.1 scores F1 0 when either side is empty; v2.0
  scores 1 when both are empty and 0 when only one is (so a correct "no answer" counts).
* v2.0: a question whose gold answers are all empty after normalisation (no-answer questions)
  has the gold list ``[""]``. Questions missing from the predictions are skipped (they do not
  count in ``total``), while v1.1 counts them as 0.
"""

import collections
import json
import re
import string
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from absl import logging

from bert_tf.errors import InputDataError
from bert_tf.file_streams import open_text

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES_RE = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """Normalises an answer string for comparison (official ``normalize_answer``).

    Order: lower case, remove ASCII punctuation (``string.punctuation``), replace the whole
    words a/an/the with a space, then collapse all whitespace to single spaces.
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES_RE.sub(" ", text)
    return " ".join(text.split())


def get_tokens(text: str) -> List[str]:
    """The normalised answer split on whitespace; [] for an empty or None answer."""
    if not text:
        return []
    return normalize_answer(text).split()


def _overlap_f1(pred_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


# ---- SQuAD 1.1 --------------------------------------------------------------------------------

def exact_match_score(prediction: str, ground_truth: str) -> bool:
    """SQuAD 1.1 exact match: the normalised strings are equal."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction: str, ground_truth: str) -> float:
    """SQuAD 1.1 token F1 (bag of normalised tokens); 0.0 when nothing overlaps or a side is empty."""
    return _overlap_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def metric_max_over_ground_truths(metric_fn, prediction: str, ground_truths: Iterable[str]) -> float:
    """``max(metric_fn(prediction, gt) for gt in ground_truths)``."""
    return max(metric_fn(prediction, gt) for gt in ground_truths)


def evaluate_v1(dataset: Sequence[Mapping], predictions: Mapping[str, str]) -> Dict[str, float]:
    """Official SQuAD 1.1 evaluation.

    Args:
      dataset: the ``data`` list of a SQuAD JSON file (articles -> paragraphs -> qas).
      predictions: qas id -> predicted answer text (``predictions.json``).

    Returns:
      ``{"exact_match": pct, "f1": pct}`` over **all** questions of ``dataset``; a question
      without a prediction scores 0 (and is logged).

    Raises:
      InputDataError: the dataset has no question, or an entry lacks a key.
    """
    total = 0
    exact = 0.0
    f1 = 0.0
    for qa in _iter_qas(dataset):
        total += 1
        if qa["id"] not in predictions:
            logging.warning("Unanswered question %s will receive score 0.", qa["id"])
            continue
        ground_truths = [a["text"] for a in qa["answers"]]
        if not ground_truths:
            raise InputDataError(f"SQuAD 1.1 question {qa['id']} has no gold answer")
        prediction = predictions[qa["id"]]
        exact += metric_max_over_ground_truths(exact_match_score, prediction, ground_truths)
        f1 += metric_max_over_ground_truths(f1_score, prediction, ground_truths)
    if total == 0:
        raise InputDataError("the SQuAD dataset holds no question")
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


# ---- SQuAD 2.0 --------------------------------------------------------------------------------

def compute_exact(a_gold: str, a_pred: str) -> int:
    """SQuAD 2.0 exact match: 1 if the normalised strings are equal, else 0."""
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold: str, a_pred: str) -> float:
    """SQuAD 2.0 token F1: like :func:`f1_score`, but two empty answers score 1 and one empty 0."""
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    if not gold_toks or not pred_toks:
        return float(gold_toks == pred_toks)
    return _overlap_f1(pred_toks, gold_toks)


def make_qid_to_has_ans(dataset: Sequence[Mapping]) -> Dict[str, bool]:
    """qas id -> whether the question has at least one gold answer (in file order)."""
    return {qa["id"]: bool(qa["answers"]) for qa in _iter_qas(dataset)}


def get_raw_scores(dataset: Sequence[Mapping],
                   preds: Mapping[str, str]) -> Tuple[Dict[str, int], Dict[str, float]]:
    """Per-question exact and F1 (maxima over the gold answers, ``[""]`` if none is non-empty).

    Questions without a prediction are logged and left out of both dicts.
    """
    exact_scores = {}
    f1_scores = {}
    for qa in _iter_qas(dataset):
        qid = qa["id"]
        gold_answers = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
        if not gold_answers:
            gold_answers = [""]
        if qid not in preds:
            logging.warning("Missing prediction for %s", qid)
            continue
        a_pred = preds[qid]
        exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
        f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def apply_no_ans_threshold(scores: Mapping[str, float], na_probs: Mapping[str, float],
                           qid_to_has_ans: Mapping[str, bool],
                           na_prob_thresh: float) -> Dict[str, float]:
    """Scores after predicting "no answer" wherever ``na_probs[qid] > na_prob_thresh``.

    A question predicted unanswerable scores 1.0 if it has no gold answer, else 0.0.
    """
    new_scores = {}
    for qid, s in scores.items():
        if na_probs[qid] > na_prob_thresh:
            new_scores[qid] = float(not qid_to_has_ans[qid])
        else:
            new_scores[qid] = s
    return new_scores


def make_eval_dict(exact_scores: Mapping[str, float], f1_scores: Mapping[str, float],
                   qid_list: Optional[Sequence[str]] = None) -> "collections.OrderedDict":
    """``{"exact", "f1", "total"}`` in percent over ``qid_list`` (default: every scored question)."""
    if qid_list is None:
        total = len(exact_scores)
        exact = sum(exact_scores.values())
        f1 = sum(f1_scores.values())
    else:
        total = len(qid_list)
        exact = sum(exact_scores[k] for k in qid_list)
        f1 = sum(f1_scores[k] for k in qid_list)
    out = collections.OrderedDict()
    out["exact"] = 100.0 * exact / total if total else 0.0
    out["f1"] = 100.0 * f1 / total if total else 0.0
    out["total"] = total
    return out


def find_best_thresh_v2(preds: Mapping[str, str], scores: Mapping[str, float],
                        na_probs: Mapping[str, float],
                        qid_to_has_ans: Mapping[str, bool]) -> Tuple[float, float, float]:
    """Best null threshold for one metric (XLNet ``find_best_thresh_v2``).

    Start from "every question predicted unanswerable" (running score = number of scored
    no-answer questions; the original counted those of the whole data set, issue 15), then walk the questions by ascending ``na_probs`` (stable: ties keep the order
    of ``na_probs``), switching each to its prediction: an answerable question adds its score,
    an unanswerable one adds -1 if its prediction is non-empty (0 otherwise). Keep the best
    running score (strictly greater) and the ``na_probs`` value where it occurred.

    Args:
      preds: qas id -> predicted text.
      scores: qas id -> raw exact or F1 score (0..1) of the prediction.
      na_probs: qas id -> null score (BERT: ``null_odds.json``, the score difference).
      qid_to_has_ans: qas id -> whether the question has a gold answer.

    Returns:
      ``(best_score_pct, best_thresh, has_ans_score)``: best_score_pct = 100 * best / number of
      scored questions; best_thresh = 0.0 if no switch improves on all-null; has_ans_score =
      mean raw score over answerable questions (a fraction, 0.0 if there is none).
    """
    # The original counts the no-answer questions of the whole data set but divides by the
    # scored ones: a prediction file covering some questions gave best_exact > 100 (5 right
    # out of 208 scored: 2340.0). Counting the scored ones gives the same numbers when every
    # question is scored, and a percentage otherwise.
    num_no_ans = sum(1 for k in scores if not qid_to_has_ans[k])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for qid in qid_list:
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]

    has_ans_score, has_ans_cnt = 0.0, 0
    for qid in qid_list:
        if not qid_to_has_ans[qid]:
            continue
        has_ans_cnt += 1
        if qid not in scores:
            continue
        has_ans_score += scores[qid]
    best_pct = 100.0 * best_score / len(scores) if scores else 0.0
    return best_pct, best_thresh, (has_ans_score / has_ans_cnt if has_ans_cnt else 0.0)


def find_all_best_thresh_v2(main_eval: Dict, preds: Mapping[str, str],
                            exact_raw: Mapping[str, float], f1_raw: Mapping[str, float],
                            na_probs: Mapping[str, float],
                            qid_to_has_ans: Mapping[str, bool]) -> None:
    """Adds ``best_exact``, ``best_exact_thresh``, ``best_f1``, ``best_f1_thresh`` (percent /
    null-score thresholds) and ``has_ans_exact``, ``has_ans_f1`` (fractions 0..1) to ``main_eval``.

    Source: XLNet ``squad_utils.find_all_best_thresh_v2``. Predict "no answer" when a question's
    null score is **greater than** the threshold.
    """
    best_exact, exact_thresh, has_ans_exact = find_best_thresh_v2(
        preds, exact_raw, na_probs, qid_to_has_ans)
    best_f1, f1_thresh, has_ans_f1 = find_best_thresh_v2(preds, f1_raw, na_probs, qid_to_has_ans)
    main_eval["best_exact"] = best_exact
    main_eval["best_exact_thresh"] = float(exact_thresh)
    main_eval["best_f1"] = best_f1
    main_eval["best_f1_thresh"] = float(f1_thresh)
    main_eval["has_ans_exact"] = has_ans_exact
    main_eval["has_ans_f1"] = has_ans_f1


def evaluate_v2(dataset: Sequence[Mapping], preds: Mapping[str, str],
                na_probs: Optional[Mapping[str, float]] = None,
                na_prob_thresh: float = 1.0) -> "collections.OrderedDict":
    """Official SQuAD 2.0 evaluation, plus the threshold search when ``na_probs`` is given.

    Args:
      dataset: the ``data`` list of a SQuAD 2.0 JSON file.
      preds: qas id -> predicted text ("" = no answer).
      na_probs: qas id -> null score (``null_odds.json``); None = 0.0 for every prediction and
        no threshold search (as the official script without ``--na-prob-file``).
      na_prob_thresh: questions with ``na_probs > na_prob_thresh`` are predicted unanswerable
        for ``exact``/``f1`` (official default 1.0).

    Returns:
      OrderedDict with ``exact``, ``f1``, ``total``, then ``HasAns_exact``, ``HasAns_f1``,
      ``HasAns_total`` and ``NoAns_*`` (each only when such questions exist), then, with
      ``na_probs``, the keys of :func:`find_all_best_thresh_v2`. Percentages except
      ``has_ans_*``.

    Raises:
      InputDataError: ``na_probs`` lacks a predicted question; an entry lacks a key.
    """
    search = na_probs is not None
    if na_probs is None:
        na_probs = {k: 0.0 for k in preds}
    qid_to_has_ans = make_qid_to_has_ans(dataset)
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    exact_raw, f1_raw = get_raw_scores(dataset, preds)
    missing = [k for k in exact_raw if k not in na_probs]
    if missing:
        raise InputDataError(f"null odds lack {len(missing)} predicted question(s), e.g. {missing[0]}")
    exact_thresh = apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    f1_thresh = apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    out_eval = make_eval_dict(exact_thresh, f1_thresh)
    for prefix, qids in (("HasAns", has_ans_qids), ("NoAns", no_ans_qids)):
        qids = [k for k in qids if k in exact_thresh]
        if qids:
            for key, value in make_eval_dict(exact_thresh, f1_thresh, qid_list=qids).items():
                out_eval[f"{prefix}_{key}"] = value
    if search:
        find_all_best_thresh_v2(out_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans)
    return out_eval


# ---- files ------------------------------------------------------------------------------------

def load_json(path: str):
    """Reads a JSON file (dataset, predictions or null odds).

    Raises:
      InputDataError: the file is missing or not valid JSON (names the file, line and column).
    """
    try:
        with open_text(path) as f:  # local or gs:// (tf.io.gfile)
            return json.load(f)
    except FileNotFoundError as e:
        raise InputDataError(f"{path}: file not found") from e
    except json.JSONDecodeError as e:
        raise InputDataError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e


def _iter_qas(dataset: Sequence[Mapping]):
    """Yields every question dict, checking the keys the metrics read."""
    for a, article in enumerate(dataset):
        for p, paragraph in enumerate(_get(article, "paragraphs", f"data[{a}]")):
            for q, qa in enumerate(_get(paragraph, "qas", f"data[{a}].paragraphs[{p}]")):
                where = f"data[{a}].paragraphs[{p}].qas[{q}]"
                _get(qa, "id", where)
                for i, answer in enumerate(_get(qa, "answers", f"{where} (id {qa['id']})")):
                    _get(answer, "text", f"{where}.answers[{i}] (id {qa['id']})")
                yield qa


def _get(obj, key: str, where: str):
    if not isinstance(obj, Mapping) or key not in obj:
        raise InputDataError(f"SQuAD dataset: {where} has no key {key!r}")
    return obj[key]
