"""Issue 26's training parts against hand-worked values: the slanted triangular schedule
(ULMFiT eq. 3), layer-wise update multipliers and gradual unfreezing in AdamWeightDecay (spec
7.2's update restated in numpy, tests/training/spec_formulas.py), the BERT / ALBERT blocks,
and the restart statistics."""
import math

import keras
import numpy as np
import pytest

from bert_tf.bert.recipes import albert_block_of, bert_block_of
from bert_tf.errors import FlagError
from bert_tf.training import restarts
from bert_tf.training.optimizer import AdamWeightDecay
from bert_tf.training.recipes import LayerRecipe, parse_feature_layers, seed_run
from bert_tf.training.schedule import SlantedTriangular, create_schedule
from tests.training.spec_formulas import spec_adam_step, spec_clip


# ---- slanted triangular --------------------------------------------------------------------

@pytest.mark.parametrize("step, expected", [
    (0, 0.01 / 32),                          # p = 0: init_lr / ratio
    (5, 0.01 * (1 + 0.5 * 31) / 32),         # halfway up: p = 5 / 10
    (10, 0.01),                              # the peak at cut = floor(100 * 0.1)
    (55, 0.01 * (1 + 0.5 * 31) / 32),        # p = 1 - 45 / (10 * (1 / 0.1 - 1)) = 0.5
    (100, 0.01 / 32),                        # p = 0 again at T
    (130, 0.01 / 32),                        # p stays at 0 past T
])
def test_slanted_triangular_is_ulmfit_eq3(step, expected):
    schedule = SlantedTriangular(0.01, 100, cut_frac=0.1, ratio=32.0)
    assert float(schedule(step)) == pytest.approx(expected, rel=1e-6)


def test_create_schedule_default_is_the_original_and_bad_values_are_named():
    original = create_schedule("warmup_linear", 1e-3, 100, 10)
    assert [float(original(s)) for s in (0, 5, 10, 50)] == pytest.approx(
        [0.0, 5e-4, 1e-3 * 0.9, 1e-3 * 0.5])
    with pytest.raises(FlagError, match="--slanted_cut_frac=1.5"):
        create_schedule("slanted_triangular", 1e-3, 100, cut_frac=1.5)
    with pytest.raises(FlagError, match="--slanted_ratio=0.5"):
        create_schedule("slanted_triangular", 1e-3, 100, ratio=0.5)
    with pytest.raises(FlagError, match="--lr_schedule=cosine"):
        create_schedule("cosine", 1e-3, 100)


# ---- blocks of BERT and ALBERT ---------------------------------------------------------------

def test_bert_blocks_and_multipliers():
    recipe = LayerRecipe(bert_block_of(6), lr_layer_decay_rate=0.8, unfreeze_every=10)
    cases = {  # name: (block, multiplier, first step)
        "output_weights": (0, 1.0, 0),
        "bert/pooler/dense/kernel": (0, 1.0, 0),
        "bert/encoder/layer_5/output/dense/kernel": (1, 1.0, 10),
        "bert/encoder/layer_4/attention/self/query/bias": (2, 0.8, 20),
        "bert/encoder/layer_0/output/LayerNorm/gamma": (6, 0.8 ** 5, 60),
        "bert/embeddings/word_embeddings": (7, 0.8 ** 6, 70),
        "bert/embeddings/LayerNorm/beta": (7, 0.8 ** 6, 70),
    }
    for name, (block, multiplier, start) in cases.items():
        assert recipe.block_of(name) == block, name
        assert recipe.update_multiplier(name) == pytest.approx(multiplier), name
        assert recipe.train_from_step(name) == start, name


def test_albert_shares_one_block():
    recipe = LayerRecipe(albert_block_of(), lr_layer_decay_rate=0.5, unfreeze_every=3)
    shared = "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/kernel"
    assert (recipe.block_of(shared), recipe.update_multiplier(shared),
            recipe.train_from_step(shared)) == (1, 1.0, 3)
    for name in ("bert/embeddings/word_embeddings",
                 "bert/encoder/embedding_hidden_mapping_in/kernel"):
        assert (recipe.block_of(name), recipe.update_multiplier(name),
                recipe.train_from_step(name)) == (2, 0.5, 6)
    assert recipe.block_of("bert/pooler/dense/bias") == 0


def test_bad_recipe_values_are_named():
    with pytest.raises(FlagError, match="--lr_layer_decay_rate=1.5"):
        LayerRecipe(lambda n: 0, 1.5)
    with pytest.raises(FlagError, match="--unfreeze_schedule=-1"):
        LayerRecipe(lambda n: 0, 1.0, -1)
    with pytest.raises(FlagError, match="--deterministic needs --seed"):
        seed_run(None, deterministic=True)
    assert parse_feature_layers("-1,-2,-3,-4", 6) == (-1, -2, -3, -4)
    assert parse_feature_layers("5,0", 6) == (-1, -6)
    with pytest.raises(FlagError, match="layer -7"):
        parse_feature_layers("-1,-7", 6)
    with pytest.raises(FlagError, match="once"):
        parse_feature_layers("-1,5", 6)


# ---- the optimizer: which variables move, by how much ---------------------------------------

# name -> block: head 0, top layer 1, bottom layer 2, embeddings 3 (no weight decay: biases)
BLOCKS = {"output_bias": 0, "bert/encoder/layer_1/output/dense/bias": 1,
          "bert/encoder/layer_0/output/dense/bias": 2, "bert/embeddings/LayerNorm/beta": 3}


def _run_updates(recipe, steps, lr=0.1, clip_norm=None):
    rng = np.random.RandomState(0)
    names = list(BLOCKS)
    values = {n: rng.uniform(-1, 1, (3,)).astype(np.float32) for n in names}
    variables = {n: keras.Variable(values[n], name=f"v{i}") for i, n in enumerate(names)}
    opt = AdamWeightDecay(learning_rate=lr, weight_decay_rate=0.01, clip_norm=clip_norm,
                          exclude_from_weight_decay=["bias", "beta"],
                          variable_names=variables, recipe=recipe)
    grads = [[rng.uniform(-2, 2, (3,)).astype(np.float32) for _ in names] for _ in range(steps)]
    history = []
    for step_grads in grads:
        opt.apply(step_grads, list(variables.values()))
        history.append({n: variables[n].numpy().copy() for n in names})
    return values, grads, history, opt


def test_layer_decay_scales_each_update_by_its_block_rate():
    recipe = LayerRecipe(BLOCKS.get, lr_layer_decay_rate=0.5)
    values, grads, history, _ = _run_updates(recipe, steps=2)
    for i, name in enumerate(BLOCKS):
        multiplier = 0.5 ** max(0, BLOCKS[name] - 1)   # 1, 1, 0.5, 0.25
        param, m, v = values[name], 0.0, 0.0
        for step in range(2):
            param, m, v = spec_adam_step(param, grads[step][i], m, v, 0.1 * multiplier,
                                         decay=False)
            np.testing.assert_allclose(history[step][name], param, rtol=1e-6, atol=1e-7)
    # The first Adam step (no bias correction) moves each element by lr * mult * 0.1 |g| /
    # (sqrt(0.001) |g| + 1e-6), about lr * mult * 3.1623 for |g| >> 1e-6:
    first = {n: np.abs(history[0][n] - values[n]) for n in BLOCKS}
    assert first["output_bias"].max() == pytest.approx(0.1 * 3.16227, rel=1e-4)
    assert first["bert/embeddings/LayerNorm/beta"].max() == pytest.approx(0.025 * 3.16227,
                                                                          rel=1e-4)


def test_xlnet_gradient_scaling_would_not_change_the_adam_update():
    """Why the update, not the gradient, is scaled: Adam's first step is the same (up to
    epsilon) for g and 0.25 g."""
    g = np.array([0.5, -1.0, 2.0])
    full, _, _ = spec_adam_step(np.zeros(3), g, 0.0, 0.0, 0.1, decay=False)
    scaled, _, _ = spec_adam_step(np.zeros(3), 0.25 * g, 0.0, 0.0, 0.1, decay=False)
    np.testing.assert_allclose(full, scaled, rtol=1e-3)  # differs only through epsilon
    assert np.abs(full).max() == pytest.approx(0.1 * 3.16227, rel=1e-4)


def test_gradual_unfreezing_trains_one_more_block_every_k_steps():
    recipe = LayerRecipe(BLOCKS.get, unfreeze_every=2)
    values, grads, history, opt = _run_updates(recipe, steps=5, clip_norm=1.0)
    names = list(BLOCKS)
    # Expected: block b frozen (exactly its start value, zero slots) before step 2b; from then
    # on the spec update of its gradients, clipped by the global norm of the unfrozen ones.
    params = dict(values)
    slots = {n: (0.0, 0.0) for n in names}
    for step in range(5):
        live = [i for i, n in enumerate(names) if 2 * BLOCKS[n] <= step]
        clipped = spec_clip([grads[step][i] for i in live])
        for i, g in zip(live, clipped):
            n = names[i]
            params[n], m, v = spec_adam_step(params[n], g, *slots[n], 0.1, decay=False)
            slots[n] = (m, v)
        for n in names:
            np.testing.assert_allclose(history[step][n], params[n], rtol=1e-6, atol=1e-7,
                                       err_msg=f"{n} at step {step}")
    # after 5 updates (steps 0-4): the embeddings (block 3, from step 6) never moved
    np.testing.assert_array_equal(history[-1]["bert/embeddings/LayerNorm/beta"],
                                  values["bert/embeddings/LayerNorm/beta"])
    slot = opt.slot_variables()
    assert not np.any(slot["bert/embeddings/LayerNorm/beta/adam_m"].numpy())
    assert not np.any(slot["bert/embeddings/LayerNorm/beta/adam_v"].numpy())
    assert np.any(slot["bert/encoder/layer_0/output/dense/bias/adam_m"].numpy())


def test_no_recipe_is_the_original_update():
    values, grads, history, _ = _run_updates(None, steps=2, clip_norm=1.0)
    names = list(BLOCKS)
    params = dict(values)
    slots = {n: (0.0, 0.0) for n in names}
    for step in range(2):
        for n, g in zip(names, spec_clip(grads[step])):
            params[n], m, v = spec_adam_step(params[n], g, *slots[n], 0.1, decay=False)
            slots[n] = (m, v)
            np.testing.assert_allclose(history[step][n], params[n], rtol=1e-6, atol=1e-7)


# ---- restart statistics ---------------------------------------------------------------------

def test_summary_and_best_restart():
    runs = [{"eval_accuracy": 0.5, "eval_loss": 0.9}, {"eval_accuracy": 0.7, "eval_loss": 0.4},
            {"eval_accuracy": 0.6, "eval_loss": 0.5}]
    stats = restarts.summarize(runs)
    acc = stats["eval_accuracy"]
    assert acc["mean"] == pytest.approx(0.6)
    assert acc["std"] == pytest.approx(0.1)        # sqrt((0.01 + 0.01 + 0) / (3 - 1))
    assert (acc["min"], acc["max"], acc["n"]) == (0.5, 0.7, 3)
    assert stats["eval_loss"]["std"] == pytest.approx(math.sqrt((0.09 + 0.04 + 0.01) / 2),
                                                      rel=1e-6)  # mean 0.6: deviations 0.3, -0.2, -0.1
    assert restarts.best_run(runs, "eval_accuracy") == 1
    assert restarts.best_run(runs, "eval_loss") == 1        # a loss: lower is better
    assert restarts.best_run([{"f1": 1.0}, {"f1": 1.0}], "f1") == 0  # the first of equals
    with pytest.raises(FlagError, match="--select_metric=eval_mcc: restart-0 has no"):
        restarts.best_run(runs, "eval_mcc")
    assert restarts.summarize([{"a": 2.0}])["a"]["std"] == 0.0


def test_read_results_names_a_bad_line(tmp_path):
    path = tmp_path / "eval_results.txt"
    path.write_text("eval_accuracy = 0.5\nglobal_step = 3\n", encoding="utf-8")
    assert restarts.read_results(str(path)) == {"eval_accuracy": 0.5, "global_step": 3.0}
    path.write_text("eval_accuracy = 0.5\nbroken\n", encoding="utf-8")
    with pytest.raises(FlagError, match="eval_results.txt:2"):
        restarts.read_results(str(path))


def test_siamese_refuses_the_recipe_flags():
    from bert_tf.bert.recipes import refuse_recipe_flags
    from bert_tf.bert.tasks.args import ClassifierArgs

    refuse_recipe_flags(ClassifierArgs(), "--siamese")  # the defaults: nothing given
    with pytest.raises(FlagError, match="^--seed, --freeze_encoder: not supported with "
                                        "--siamese"):
        refuse_recipe_flags(ClassifierArgs(seed=0, freeze_encoder=True), "--siamese")
