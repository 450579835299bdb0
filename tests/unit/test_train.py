"""Training: a few steps lower the loss, resume continues, and 2 DDP processes equal 1 on the same global batch."""


import pytest
import torch

from conftest import assert_error_line, random_batch, write_multi30k
from model import train as train_cli
from model.extras import Extras
from model.metrics import token_loss
from model.train import lr_at, word_dropout
from model.vocab import EOS_ID, PAD_ID, SOS_ID, SPECIALS, UNK_ID

@pytest.fixture
def tiny_data(tmp_path):
    return write_multi30k(tmp_path / "data")


def test_a_few_steps_lower_the_loss(tiny_model):
    src, tgt = random_batch(tiny_model.cfg, B=4)
    model = tiny_model.train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        loss, n = token_loss(model(src, tgt[:, :-1], Extras(need_weights=False)).logits, tgt[:, 1:])
        opt.zero_grad()
        (loss / n).backward()
        opt.step()
        losses.append(loss.item() / n)
    assert losses[-1] < 0.5 * losses[0]


def test_train_cli_without_data_says_which_files(tmp_path, call):
    status, _, err = call(train_cli.main, "--data-dir", tmp_path)
    assert_error_line(status, err, "train.de.gz")


def test_learning_rate_schedule():
    assert lr_at(0, 1e-3, 0, False) == lr_at(500, 1e-3, 0, True) == 1e-3  # the reference: constant
    assert lr_at(0, 1e-3, 10, True) == pytest.approx(1e-4)
    assert lr_at(9, 1e-3, 10, True) == pytest.approx(1e-3)
    assert lr_at(39, 1e-3, 10, True) == pytest.approx(1e-3 * (10 / 40) ** 0.5)


def test_word_dropout_replaces_only_real_tokens():
    torch.manual_seed(0)
    ids = torch.randint(0, 50, (256, 40))  # specials 0-3 (incl. <pad>) and real tokens mixed
    real = ids >= len(SPECIALS)
    assert word_dropout(ids, 0.0) is ids  # off: nothing drawn, nothing changed
    everything = word_dropout(ids, 1.0)
    assert torch.equal(everything, torch.where(real, torch.full_like(ids, UNK_ID), ids))
    some = word_dropout(ids, 0.1)
    changed = some != ids
    assert not changed[~real].any() and (some[changed] == UNK_ID).all()
    rate = changed.sum().item() / real.sum().item()
    assert abs(rate - 0.1) < 0.01, rate  # ~9,400 real tokens: 3 standard deviations is 0.0093
    specials = torch.tensor([[SOS_ID, PAD_ID, UNK_ID, EOS_ID]])
    assert torch.equal(word_dropout(specials, 1.0), specials)


@pytest.mark.parametrize("spec", ["x", "e0", "-5", "e"])
def test_snapshots_spec_errors_are_one_line(tiny_data, call, spec):
    status, _, err = call(train_cli.main, "--data-dir", tiny_data, "--snapshots", spec)
    assert_error_line(status, err, "--snapshots")
