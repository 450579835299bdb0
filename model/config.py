"""The model's configuration: plain data, stored as JSON inside every checkpoint."""

from dataclasses import asdict, dataclass, fields

# The largest value each size may take. A config comes from a checkpoint's JSON, and these sizes decide how much
# memory the model takes before a single weight is read: a checkpoint past them cannot be a model for this app
# (the reference is 256 wide, 3 + 3 layers, 8 heads, FFN 512, 100 positions, vocabularies of 7,853 and 5,893).
# They are generous for any model that runs on a CPU at page speed; checkpoint.py bounds the total as well.
MAX_SIZES = {
    "src_vocab_size": 1_000_000, "tgt_vocab_size": 1_000_000,
    "d_model": 4096, "d_ff": 16384, "n_heads": 64, "n_enc_layers": 48, "n_dec_layers": 48, "max_positions": 4096,
}
MAX_PARAMETERS = 250_000_000  # and in all: 1 GB of float32 weights, 28 times the reference model's 9,038,341

OPTIONAL = ("unk_id", "sos_id", "eos_id", "norm_position", "final_norm", "layer_norm", "norm_eps", "activation",
            "embed_scale", "tie", "source_start")  # keys a config may lack (from_dict): added with the families


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
    positions: str = "learned"  # "learned" embedding, the paper's fixed "sinusoidal" table (sin, cos interleaved),
    #                             or "halves": Marian's table of the same angles, all sines first, then all cosines
    pad_id: int = 1  # index of <pad> in both vocabularies (docs/contract.md: <unk>=0 <pad>=1 <sos>=2 <eos>=3)
    unk_id: int = 0  # and of the other three specials (another family's vocabulary has them elsewhere: <s>=0 ...)
    sos_id: int = 2  # the decoder's first input; may be pad_id (Marian starts decoding from <pad>)
    eos_id: int = 3
    # Where the model families differ (model/convert.py; the defaults are the paper's and this project's model):
    norm_position: str = "post"  # "post": LayerNorm(x + Sublayer(x)), the paper; "pre": x + Sublayer(LayerNorm(x))
    final_norm: bool = False  # a LayerNorm after the last encoder layer and after the last decoder layer
    layer_norm: str = "standard"  # "standard": (x - mean) / sqrt(var + eps); "std": (x - mean) / (std + eps), the
    #                               unbiased std (the Annotated Transformer's LayerNorm)
    norm_eps: float = 1e-5
    activation: str = "relu"  # the feed-forward net's: "relu" (the paper), "swish" (x sigmoid(x): Marian), "gelu"
    embed_scale: bool = True  # token embeddings times sqrt(d_model) (section 3.4)
    tie: str = "none"  # shared tables: "none"; "target": the generator's weight is the target embedding; "all":
    #                    one table for the source embedding, the target embedding and the generator (Marian)
    source_start: bool = True  # the source begins with <sos> (ours, the tutorials'); Marian's ends with </s> only

    def __post_init__(self):
        # Raised, not asserted: a config comes from a checkpoint's JSON, and `python -O` drops asserts.
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_enc_layers", "n_dec_layers", "n_heads",
                     "d_ff", "max_positions"):
            value = getattr(self, name)
            if type(value) is not int or value <= 0:  # type(): True is an int too
                raise ValueError(f"{name} must be a whole number above 0, got {value!r}")
            if value > MAX_SIZES[name]:
                raise ValueError(f"{name} must be at most {MAX_SIZES[name]:,}, got {value:,}")
        for name in ("pad_id", "unk_id", "sos_id", "eos_id"):
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value < min(self.src_vocab_size, self.tgt_vocab_size):
                raise ValueError(f"{name} must be an index into both vocabularies, got {value!r}")
        if len({self.pad_id, self.unk_id, self.eos_id}) != 3 or self.sos_id in (self.unk_id, self.eos_id):
            raise ValueError("pad_id, unk_id and eos_id must be three different indices, and sos_id another one or "
                             "pad_id")
        if type(self.dropout) not in (int, float) or not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be a number in [0, 1), got {self.dropout!r}")
        if self.positions not in ("learned", "sinusoidal", "halves"):
            raise ValueError(f"positions must be 'learned', 'sinusoidal' or 'halves', got {self.positions!r}")
        if self.activation not in ("relu", "swish", "gelu"):
            raise ValueError(f"activation must be 'relu', 'swish' or 'gelu', got {self.activation!r}")
        if self.tie not in ("none", "target", "all"):
            raise ValueError(f"tie must be 'none', 'target' or 'all', got {self.tie!r}")
        if self.tie == "all" and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError("tie 'all' shares one table: the two vocabularies must be of one size")
        for name in ("embed_scale", "source_start"):
            if type(getattr(self, name)) is not bool:
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.norm_position not in ("post", "pre"):
            raise ValueError(f"norm_position must be 'post' or 'pre', got {self.norm_position!r}")
        if type(self.final_norm) is not bool:
            raise ValueError(f"final_norm must be true or false, got {self.final_norm!r}")
        if self.layer_norm not in ("standard", "std"):
            raise ValueError(f"layer_norm must be 'standard' or 'std', got {self.layer_norm!r}")
        if type(self.norm_eps) not in (int, float) or not 0 < self.norm_eps < 1:
            raise ValueError(f"norm_eps must be a number in (0, 1), got {self.norm_eps!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.n_params > MAX_PARAMETERS:
            raise ValueError(f"these sizes make {self.n_params:,} parameters, more than the {MAX_PARAMETERS:,} "
                             f"a model may have here")

    @property
    def n_params(self) -> int:
        """The model's parameter count from the sizes alone, without building it (= Transformer.n_params())."""
        D, F, V = self.d_model, self.d_ff, self.tgt_vocab_size
        attention = 4 * (D * D + D)  # W_q, W_k, W_v, W_o and their biases
        ffn = D * F + F + F * D + D  # W_1, b_1, W_2, b_2
        norm = 2 * D  # gain and bias
        positions = 2 * self.max_positions * D if self.positions == "learned" else 0  # a table per side
        tables = {"none": self.src_vocab_size * D + 2 * V * D, "target": (self.src_vocab_size + V) * D,
                  "all": V * D}[self.tie]  # the embeddings and the generator's weight, each shared table once
        return (tables + positions
                + self.n_enc_layers * (attention + ffn + 2 * norm)
                + self.n_dec_layers * (2 * attention + ffn + 3 * norm)
                + (2 * norm if self.final_norm else 0)
                + V)  # the generator's bias

    @property
    def head_size(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        """A config from its JSON (every key, as to_dict writes it); ValueError saying what is wrong.

        A missing key is an error, not its default: a checkpoint's shapes follow from every value. Only the keys
        added with the model families (OPTIONAL) may be missing: a checkpoint saved before them has the paper's
        post-LN model, which their defaults describe.
        """
        if not isinstance(d, dict):
            raise ValueError(f"a config is a JSON object, got {type(d).__name__}")
        known = [f.name for f in fields(cls)]
        unknown, missing = sorted(set(d) - set(known)), [k for k in known if k not in d and k not in OPTIONAL]
        if unknown:
            raise ValueError(f"unknown config keys {unknown}")
        if missing:
            raise ValueError(f"missing config keys {missing}")
        return cls(**d)
