"""Shared fixtures: tiny models for unit tests, the shipped checkpoint and the data set when present."""

from pathlib import Path

import pytest
import torch

from model.config import ModelConfig
from model.data import default_data_dir
from model.transformer import Transformer

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = ROOT / "checkpoints"


@pytest.fixture(autouse=True)
def torch_threads():
    """app.py sets torch to one thread per call (for its sessions), and AppTest runs app.py inside this
    process: put the count back, so that later tests (and provenance, which names it) see the default."""
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def tiny_config(**kw) -> ModelConfig:
    base = dict(src_vocab_size=23, tgt_vocab_size=19, d_model=16, n_enc_layers=2, n_dec_layers=2,
                n_heads=4, d_ff=32, max_positions=24)
    return ModelConfig(**{**base, **kw})


@pytest.fixture
def tiny_model():
    torch.manual_seed(0)
    return Transformer(tiny_config()).eval()


def random_batch(cfg, B=3, S=7, T=6, seed=0):
    """Source and target ids with <sos> first, <eos>, and right padding of different lengths."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, cfg.src_vocab_size, (B, S), generator=g)
    tgt = torch.randint(4, cfg.tgt_vocab_size, (B, T), generator=g)
    src[:, 0] = tgt[:, 0] = 2
    for b in range(B):
        s_len, t_len = S - b, T - b  # row b has b padding positions
        src[b, s_len - 1], tgt[b, t_len - 1] = 3, 3
        src[b, s_len:], tgt[b, t_len:] = 1, 1
    return src, tgt


@pytest.fixture(scope="session")
def data_dir():
    d = default_data_dir()
    if d is None:
        pytest.skip("Multi30k not found: set MULTI30K_DIR or put it in ../shared/data/multi30k")
    return d


@pytest.fixture(scope="session")
def translator():
    if not (CHECKPOINT / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint in checkpoints/")
    from model.translator import Translator

    return Translator.load(CHECKPOINT, "cpu")


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> str:
    """A checkpoint folder of tiny_model with test_decoding's vocabularies, saved once per session: for the
    command-line tools, which take a folder. Read-only: a test that writes beside a checkpoint makes its own."""
    from model.checkpoint import save_checkpoint
    from model.vocab import Vocab
    from test_decoding import ENGLISH, GERMAN

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny") / "ckpt"
    save_checkpoint(Transformer(tiny_config()).eval(), Vocab(GERMAN), Vocab(ENGLISH), folder)
    return str(folder)
