"""The model's configuration: plain data, stored as JSON inside every checkpoint."""

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class ModelConfig:
    src_vocab_size: int  # German vocabulary, specials included
    tgt_vocab_size: int  # English vocabulary, specials included
    d_model: int = 256  # width of every residual stream (D)
    n_enc_layers: int = 3  # encoder layers
    n_dec_layers: int = 3  # decoder layers
    n_heads: int = 8  # heads per attention sublayer (H); head size D / H
    d_ff: int = 512  # hidden width of the position-wise feed-forward net
    dropout: float = 0.1  # embeddings, attention weights, sublayer outputs, FFN hidden
    max_positions: int = 100  # positions the model has, <sos> and <eos> included
    positions: str = "learned"  # "learned" embedding or the paper's fixed "sinusoidal" table
    pad_id: int = 1  # index of <pad> in both vocabularies (SPEC: <unk>=0 <pad>=1 <sos>=2 <eos>=3)

    def __post_init__(self):
        assert self.d_model % self.n_heads == 0, f"d_model {self.d_model} not divisible by n_heads {self.n_heads}"
        assert self.positions in ("learned", "sinusoidal"), f"unknown positions {self.positions!r}"

    @property
    def head_size(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown config keys {sorted(unknown)}")
        return cls(**d)
