"""The paper's fixed position encodings (section 3.5), the one definition that the model and viz/ both use.

numpy, not torch, so that viz/ can draw the very table the model adds (model/minimal.py keeps its own few
lines in torch, a second route that tests/unit/test_viz.py holds equal to this one).
"""

import numpy as np


def sinusoidal_table(n_positions: int, d_model: int, halves: bool = False) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(pos / 10000^(2i/D)): (P, D), float64.

    halves: the same angles laid out as Marian's table (Hugging Face's MarianSinusoidalPositionalEmbedding): the D/2
    sines first, PE(pos, i) = sin(angle_i), then the D/2 cosines, PE(pos, D/2 + i) = cos(angle_i).
    """
    pos = np.arange(n_positions)[:, None]  # (P, 1)
    angle = pos / np.power(10000.0, np.arange(0, d_model, 2) / d_model)[None, :]  # (P, D/2)
    if halves:
        return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
    table = np.zeros((n_positions, d_model))
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    return table
