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
    pad_id: int = 1  # index of <pad> in both vocabularies (docs/contract.md: <unk>=0 <pad>=1 <sos>=2 <eos>=3)

    def __post_init__(self):
        # Raised, not asserted: a config comes from a checkpoint's JSON, and `python -O` drops asserts.
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_enc_layers", "n_dec_layers", "n_heads",
                     "d_ff", "max_positions"):
            value = getattr(self, name)
            if type(value) is not int or value <= 0:  # type(): True is an int too
                raise ValueError(f"{name} must be a whole number above 0, got {value!r}")
        if type(self.pad_id) is not int or not 0 <= self.pad_id < min(self.src_vocab_size, self.tgt_vocab_size):
            raise ValueError(f"pad_id must be an index into both vocabularies, got {self.pad_id!r}")
        if type(self.dropout) not in (int, float) or not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be a number in [0, 1), got {self.dropout!r}")
        if self.positions not in ("learned", "sinusoidal"):
            raise ValueError(f"positions must be 'learned' or 'sinusoidal', got {self.positions!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")

    @property
    def head_size(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        """A config from its JSON (every key, as to_dict writes it); ValueError saying what is wrong.

        A missing key is an error, not its default: a checkpoint's shapes follow from every value.
        """
        if not isinstance(d, dict):
            raise ValueError(f"a config is a JSON object, got {type(d).__name__}")
        known = [f.name for f in fields(cls)]
        unknown, missing = sorted(set(d) - set(known)), [k for k in known if k not in d]
        if unknown:
            raise ValueError(f"unknown config keys {unknown}")
        if missing:
            raise ValueError(f"missing config keys {missing}")
        return cls(**d)
