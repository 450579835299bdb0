"""Training evidence (model/evidence.py, views/evidence.py): the lexical table, the step index, and the view."""

import numpy as np
import pytest

from conftest import CHECKPOINT
from model.evidence import DIMS, STEP_FILE, StepIndex, decoder_states, step_lines, step_state
from model.vocab import SOS_ID, tokenize
from unit.test_evidence import training


@pytest.fixture(scope="module")
def learned(translator):
    if not (CHECKPOINT / STEP_FILE).is_file():
        pytest.skip("no shipped step index")
    return translator, StepIndex(CHECKPOINT)


def test_the_step_index_is_small_and_a_training_step_finds_itself(learned, training):
    translator, index = learned
    texts, _ = training
    assert index.vectors.shape[1] == DIMS and index.basis.shape == (translator.cfg.d_model, DIMS)
    assert (CHECKPOINT / STEP_FILE).stat().st_size < 6_000_000
    assert sorted(set(index.line.tolist())) == step_lines(29_000)
    for line in (0, 5, 24_995):
        src = [SOS_ID, *translator.src_vocab.encode(tokenize(texts["de"][line], "de")), 3]
        tgt = [SOS_ID, *translator.tgt_vocab.encode(tokenize(texts["en"][line], "en"))]
        states = decoder_states(translator, [src], [tgt])[0]
        for step in (0, 2):
            row = int(np.flatnonzero((index.line == line) & (index.step == step))[0])
            own = 1 - float(index.vectors[row].numpy() @ index.project(states[step][None])[0])
            first = index.nearest(states[step], texts, k=3)[0]
            assert own < 0.01 and first.distance <= own + 1e-4  # itself, up to int8 rounding; nothing nearer (the


def test_a_steps_state_is_the_teacher_forced_state_of_the_greedy_output(learned):
    """step_state (one teacher-forced pass) equals the state greedy decoding had, read by a hook on the output
    layer during the decoding itself."""
    translator, _ = learned
    result = translator.translate("Ein Hund rennt durch den Schnee.")
    seen = []
    hook = translator.model.generator.register_forward_hook(lambda m, i, o: seen.append(i[0][0, -1].detach().numpy()))
    try:
        translator.translate("Ein Hund rennt durch den Schnee.", top_k=1)
    finally:
        hook.remove()
    for t in range(len(result.steps)):
        assert np.allclose(step_state(translator, result, t), seen[t], atol=1e-4)
