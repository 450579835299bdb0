"""Inside one head on the shipped model: the tests of tests/unit/test_inspect.py that take `any_translator`, run here
on the shipped checkpoint (skipped where it is missing), and the command line's numbers against the library's.
"""

import json

import numpy as np
import pytest

from conftest import CHECKPOINT
from model import inspect as inspect_cli
from unit.test_inspect import SENTENCE
from unit.test_inspect import (  # collected here again, each with the shipped translator
    test_a_head_trace_explains_the_map_and_the_layer, test_each_output_is_the_next_input,
    test_logit_lens_last_layer_is_the_real_distribution, test_flow_on_a_real_translation,
    test_the_embedding_and_the_feed_forward_are_captured_and_chain)


@pytest.fixture(params=["translator"])
def any_translator(request):
    """The shipped checkpoint (skipped where it is missing)."""
    return request.getfixturevalue(request.param)


def test_cli_prints_the_librarys_numbers(translator, call):
    status, out, err = call(inspect_cli.main, "head", "--checkpoint", CHECKPOINT, "--device", "cpu", "--kind", "cross",
                            "--layer", "2", "--head", "3", "--query", "1", SENTENCE)
    assert status == 0, err
    got = json.loads(out)
    want = translator.inside(SENTENCE).head("cross", 2, 3, 1)
    assert list(got) == ["kind", "layer", "head", "query", "query_token", "key_tokens", "x", "q", "k", "v", "scores",
                         "scaled", "mask", "weights", "weighted_v", "head_output", "all_heads", "attn_out",
                         "residual", "normed", "layer_output"]
    for name, value in vars(want).items():
        if isinstance(value, np.ndarray):
            assert np.asarray(got[name]).shape == value.shape, name
            if value.dtype == np.bool_:
                assert got[name] == value.tolist()
            else:
                np.testing.assert_allclose(got[name], value, rtol=1e-6, atol=1e-6, err_msg=name)
        else:
            assert got[name] == value, name
    status, out, err = call(inspect_cli.main, "lens", "--checkpoint", CHECKPOINT, "--device", "cpu", "--top-k", "3",
                            SENTENCE)
    assert status == 0, err
    got, want = json.loads(out), translator.logit_lens(SENTENCE, top_k=3)
    assert got["top_tokens"] == want.top_tokens.tolist() and got["output_tokens"] == want.output_tokens
    np.testing.assert_allclose(got["chosen_prob"], want.chosen_prob, rtol=1e-6, atol=1e-7)
