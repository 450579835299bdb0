"""Your own trained model, opened here: the state_dict a tutorial saved, turned into a checkpoint folder like ours.

    python -m model.convert FAMILY SOURCE --out DIR [--src-vocab FILE --tgt-vocab FILE] [--heads N]

Three families cover what learners train on Multi30k (docs/contract.md, "Model families"):

    tutorial   Ben Trevett's pytorch-seq2seq notebook 6, "Attention is All You Need" (and its Korean edition): our
               architecture and our vocabulary rules; a renaming of the keys (encoder.tok_embedding, fc_q, ...).
    pytorch    PyTorch's tutorial "Language Translation with nn.Transformer and torchtext" (Seq2SeqTransformer):
               nn.Transformer's packed in_proj_weight, final LayerNorms, sinusoidal positions, <bos> for <sos>,
               tokens not lower-cased.
    annotated  The Annotated Transformer (Harvard NLP, make_model): pre-LN with final norms, its own LayerNorm
               (unbiased std, eps 1e-6 added to it), linears[0..3], specials <s> </s> <blank> <unk>, tokens not
               lower-cased.

SOURCE is read with torch.load(weights_only=True): tensors only, never code. The sizes come from the tensors'
shapes; the number of heads cannot, so --heads (default 8, every tutorial's). Vocabulary files hold one token per
line in id order (what `vocab.get_itos()` gives). Without them, the tutorial family's are rebuilt from the Multi30k
training texts by its rules (spaCy tokens, lower-cased, seen twice, specials first, then by count, ties
alphabetical) and checked against the embeddings' sizes; the other two families need theirs. The weights are
stored as float32, so the converted model computes what the tutorial's does. Every way a file can be wrong is one
line and exit status 2.
"""

import pickle
import re
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from . import files
from .config import ModelConfig
from .errors import InputError
from .sinusoid import sinusoidal_table
from .transformer import Transformer
from .vocab import ROLES, Vocab, tokenize

MAX_POSITIONS = 100  # positions a converted sinusoidal model gets (its table is a formula; the page's limit)


@dataclass(frozen=True)
class Family:
    name: str
    title: str  # the tutorial, as its readers know it
    marker: str  # a key only this family's state_dict has
    options: dict  # ModelConfig options
    specials: tuple  # the vocabulary's first four tokens, in id order
    roles: tuple  # the role of each (model/vocab.py ROLES)
    lower: bool  # tokens lower-cased
    names: dict  # our names for its parts -> the tutorial's (the walk and Inside a head say both)


FAMILIES = {f.name: f for f in (
    Family("tutorial", "Ben Trevett's pytorch-seq2seq, notebook 6 (Attention is All You Need)",
           "encoder.tok_embedding.weight", {}, ("<unk>", "<pad>", "<sos>", "<eos>"), ("unk", "pad", "sos", "eos"),
           True, {"W_Q": "fc_q", "W_K": "fc_k", "W_V": "fc_v", "W_O": "fc_o", "scores": "energy",
                  "d_model": "hid_dim", "d_ff": "pf_dim", "generator": "fc_out"}),
    Family("pytorch", "PyTorch's tutorial: Language Translation with nn.Transformer and torchtext",
           "transformer.encoder.layers.0.self_attn.in_proj_weight",
           {"positions": "sinusoidal", "final_norm": True}, ("<unk>", "<pad>", "<bos>", "<eos>"),
           ("unk", "pad", "sos", "eos"), False,
           {"W_Q": "in_proj_weight[:d]", "W_K": "in_proj_weight[d:2d]", "W_V": "in_proj_weight[2d:]",
            "W_O": "out_proj", "d_model": "emb_size", "d_ff": "dim_feedforward", "generator": "generator"}),
    Family("annotated", "The Annotated Transformer (Harvard NLP)", "src_embed.0.lut.weight",
           {"positions": "sinusoidal", "norm_position": "pre", "final_norm": True, "layer_norm": "std",
            "norm_eps": 1e-6},
           ("<s>", "</s>", "<blank>", "<unk>"), ("sos", "eos", "pad", "unk"), False,
           {"W_Q": "linears[0]", "W_K": "linears[1]", "W_V": "linears[2]", "W_O": "linears[3]",
            "d_model": "d_model", "d_ff": "d_ff", "generator": "generator.proj"}),
)}


# --- each family's names for our weights ------------------------------------------------------------------------
def _linear(theirs: str, ours: str) -> list:
    return [(f"{theirs}.weight", f"{ours}.weight"), (f"{theirs}.bias", f"{ours}.bias")]


def _norm(theirs: str, ours: str, family: str) -> list:
    if family == "annotated":
        return [(f"{theirs}.a_2", f"{ours}.weight"), (f"{theirs}.b_2", f"{ours}.bias")]
    return _linear(theirs, ours)


def _attention(theirs: str, ours: str, family: str) -> list:
    """Their attention's parameters -> ours; pytorch's packed in_proj is split by `_unpack`."""
    if family == "tutorial":
        return [pair for p in "qkvo" for pair in _linear(f"{theirs}.fc_{p}", f"{ours}.w_{p}")]
    if family == "annotated":
        return [pair for i, p in enumerate("qkvo") for pair in _linear(f"{theirs}.linears.{i}", f"{ours}.w_{p}")]
    return [(f"{theirs}.in_proj_weight", f"{ours}.in_proj.weight"), (f"{theirs}.in_proj_bias", f"{ours}.in_proj.bias"),
            *_linear(f"{theirs}.out_proj", f"{ours}.w_o")]


@dataclass(frozen=True)
class Layout:
    """Where a family keeps each of our weights: its names for our embeddings, for the sub-layers of an encoder and
    of a decoder layer (ln_* its LayerNorms, *_attn its attentions, the rest Linears), final norms and generator."""

    stacks: tuple  # its encoder's and decoder's layer lists
    embeddings: dict  # our embedding -> its
    encoder: dict  # our sub-layer -> its, inside one encoder layer
    decoder: dict
    final: dict  # our final norm -> its
    generator: str


LAYOUTS = {
    "tutorial": Layout(
        ("encoder.layers", "decoder.layers"),
        {"src_embed.tok": "encoder.tok_embedding", "src_embed.pos": "encoder.pos_embedding",
         "tgt_embed.tok": "decoder.tok_embedding", "tgt_embed.pos": "decoder.pos_embedding"},
        {"self_attn": "self_attention", "ln_self": "self_attn_layer_norm", "ffn.fc1": "positionwise_feedforward.fc_1",
         "ffn.fc2": "positionwise_feedforward.fc_2", "ln_ffn": "ff_layer_norm"},
        {"self_attn": "self_attention", "ln_self": "self_attn_layer_norm", "cross_attn": "encoder_attention",
         "ln_cross": "enc_attn_layer_norm", "ffn.fc1": "positionwise_feedforward.fc_1",
         "ffn.fc2": "positionwise_feedforward.fc_2", "ln_ffn": "ff_layer_norm"},
        {}, "decoder.fc_out"),
    "pytorch": Layout(
        ("transformer.encoder.layers", "transformer.decoder.layers"),
        {"src_embed.tok": "src_tok_emb.embedding", "tgt_embed.tok": "tgt_tok_emb.embedding"},
        {"self_attn": "self_attn", "ln_self": "norm1", "ffn.fc1": "linear1", "ffn.fc2": "linear2", "ln_ffn": "norm2"},
        {"self_attn": "self_attn", "ln_self": "norm1", "cross_attn": "multihead_attn", "ln_cross": "norm2",
         "ffn.fc1": "linear1", "ffn.fc2": "linear2", "ln_ffn": "norm3"},
        {"enc_norm": "transformer.encoder.norm", "dec_norm": "transformer.decoder.norm"}, "generator"),
    "annotated": Layout(
        ("encoder.layers", "decoder.layers"),
        {"src_embed.tok": "src_embed.0.lut", "tgt_embed.tok": "tgt_embed.0.lut"},
        {"self_attn": "self_attn", "ln_self": "sublayer.0.norm", "ffn.fc1": "feed_forward.w_1",
         "ffn.fc2": "feed_forward.w_2", "ln_ffn": "sublayer.1.norm"},
        {"self_attn": "self_attn", "ln_self": "sublayer.0.norm", "cross_attn": "src_attn",
         "ln_cross": "sublayer.1.norm", "ffn.fc1": "feed_forward.w_1", "ffn.fc2": "feed_forward.w_2",
         "ln_ffn": "sublayer.2.norm"},
        {"enc_norm": "encoder.norm", "dec_norm": "decoder.norm"}, "generator.proj"),
}


def key_map(family: str, n_enc: int, n_dec: int) -> list[tuple[str, str]]:
    """(their key, our key) for every parameter of a family's model with these layer counts."""
    layout = LAYOUTS[family]
    pairs = [(f"{theirs}.weight", f"{ours}.weight") for ours, theirs in layout.embeddings.items()]
    for stack, ours_stack, n, subs in ((layout.stacks[0], "encoder", n_enc, layout.encoder),
                                       (layout.stacks[1], "decoder", n_dec, layout.decoder)):
        for i in range(n):
            for ours, theirs in subs.items():
                t, o = f"{stack}.{i}.{theirs}", f"{ours_stack}.{i}.{ours}"
                pairs += (_norm(t, o, family) if ours.startswith("ln_") else
                          _attention(t, o, family) if ours.endswith("attn") else _linear(t, o))
    for ours, theirs in layout.final.items():
        pairs += _norm(theirs, ours, family)
    return pairs + _linear(layout.generator, "generator")


# Buffers a family saves that are a formula here (the sinusoidal tables): checked, then left out.
POSITION_BUFFERS = {"pytorch": ("positional_encoding.pos_embedding",), "annotated": ("src_embed.1.pe", "tgt_embed.1.pe")}


def a(family: str) -> str:
    return f"{'an' if family[0] in 'aeiou' else 'a'} {family}"


# --- reading the file -------------------------------------------------------------------------------------------
def read_state_dict(path) -> dict:
    """The tensors a tutorial saved with torch.save(model.state_dict(), path), read without unpickling any code;
    InputError in one line for anything else."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if "weights only" in str(e).lower() or "weights_only" in str(e):
            raise InputError(f"{path} holds Python objects, not a plain state_dict (torch.save(model) saves the "
                             "whole model, code and all, which is never loaded here): in your notebook, run "
                             "torch.save(model.state_dict(), PATH) and convert that file") from None
        raise InputError(f"{path} is not a file torch.save wrote, or it is truncated") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, ValueError, OSError):
        raise InputError(f"{path} is truncated or not a file torch.save wrote: save it again with "
                         "torch.save(model.state_dict(), PATH)") from None
    if not isinstance(state, dict) or not state or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                                           for k, v in state.items()):
        inner = [k for k, v in state.items() if isinstance(v, dict)] if isinstance(state, dict) else []
        hint = f" (its {inner[0]!r} entry looks like one: save that alone)" if inner else ""
        raise InputError(f"{path} is not a plain state_dict of named tensors{hint}: save "
                         "torch.save(model.state_dict(), PATH)")
    return state


def family_of(state: dict) -> str | None:
    return next((f.name for f in FAMILIES.values() if f.marker in state), None)


def layer_count(state: dict, prefix: str) -> int:
    found = {int(m.group(1)) for k in state for m in [re.match(re.escape(prefix) + r"\.(\d+)\.", k)] if m}
    return max(found) + 1 if found else 0


def convert_state(family: str, state: dict, n_heads: int = 8, max_positions: int = MAX_POSITIONS) -> tuple:
    """(ModelConfig, our state_dict) of a family's state_dict; InputError saying the first thing that does not fit."""
    f = FAMILIES[family]
    if f.marker not in state:
        other = family_of(state)
        first = next(iter(state))
        raise InputError(f"this is not {a(family)} model: its first key {first!r} is not in that family's layout"
                         + (f"; it is {a(other)} model: python -m model.convert {other} ..." if other else
                            f" ({a(family)} model has {f.marker!r})"))
    layout = LAYOUTS[family]
    n_enc, n_dec = (layer_count(state, p) for p in layout.stacks)
    if not n_enc or not n_dec:
        raise InputError(f"the {family} model has no {'encoder' if not n_enc else 'decoder'} layers")
    pairs = key_map(family, n_enc, n_dec)
    missing = next((theirs for theirs, _ in pairs if theirs not in state), None)
    if missing is not None:
        raise InputError(f"the {family} model lacks {missing!r}: the file is not a whole {family} state_dict")
    known = {theirs for theirs, _ in pairs} | set(POSITION_BUFFERS.get(family, ()))
    extra = next((k for k in state if k not in known), None)
    if extra is not None:
        raise InputError(f"{extra!r} is not part of {a(family)} model ({n_enc} + {n_dec} layers)")
    src_emb, tgt_emb = (state[f"{layout.embeddings[side]}.weight"] for side in ("src_embed.tok", "tgt_embed.tok"))
    if src_emb.dim() != 2 or tgt_emb.dim() != 2 or src_emb.size(1) != tgt_emb.size(1):
        raise InputError("the two embeddings are not (vocabulary, d_model) tables of one width")
    d_model = src_emb.size(1)
    d_ff = state[next(t for t, o in pairs if o == "encoder.0.ffn.fc1.weight")].size(0)
    if type(n_heads) is not int or n_heads < 1 or d_model % n_heads:
        raise InputError(f"--heads {n_heads} does not divide d_model {d_model}")
    learned = layout.embeddings.get("src_embed.pos")  # the tutorial's learned positions: as many as it has rows
    positions = state[f"{learned}.weight"].size(0) if learned else max_positions
    ids = {f"{role}_id": f.roles.index(role) for role in ROLES}
    try:
        cfg = ModelConfig(src_vocab_size=src_emb.size(0), tgt_vocab_size=tgt_emb.size(0), d_model=d_model,
                          n_enc_layers=n_enc, n_dec_layers=n_dec, n_heads=n_heads, d_ff=d_ff,
                          max_positions=positions, **f.options, **ids)
    except ValueError as e:
        raise InputError(f"the {family} model's sizes do not make a model here: {e}") from None
    for name in POSITION_BUFFERS.get(family, ()):
        check_positions(state[name], d_model, name)
    ours = {}
    for theirs, o in pairs:
        t = state[theirs].float()
        if o.endswith(("in_proj.weight", "in_proj.bias")):
            stem = o.rsplit(".in_proj.", 1)[0]
            for p, part in zip("qkv", t.chunk(3, dim=0)):
                ours[f"{stem}.w_{p}.{o.rsplit('.', 1)[1]}"] = part.clone()
        else:
            ours[o] = t
    expected = Transformer(cfg).state_dict()
    for k, v in expected.items():
        if k not in ours:
            raise InputError(f"nothing in the {family} model gives our {k}")
        if tuple(ours[k].shape) != tuple(v.shape):
            theirs = next((t for t, o in pairs if o == k), k)
            raise InputError(f"{theirs!r} has shape {tuple(ours[k].shape)}, but this model's sizes need "
                             f"{tuple(v.shape)}")
        if not torch.isfinite(ours[k]).all():
            raise InputError(f"{k} holds NaN or infinite values: the model was saved mid-divergence")
    return cfg, ours


def check_positions(table: torch.Tensor, d_model: int, name: str, halves: bool = False):
    """A family's saved sinusoidal table must be the paper's formula, or Marian's layout of it (else it is another
    model)."""
    t = table.reshape(-1, table.size(-1)).float()  # pytorch (maxlen, 1, D), annotated (1, maxlen, D)
    if t.size(1) != d_model:
        raise InputError(f"{name!r} is {tuple(table.shape)}, not a table of width d_model {d_model}")
    n = min(t.size(0), MAX_POSITIONS)
    want = torch.from_numpy(sinusoidal_table(n, d_model, halves)).float()
    if not torch.allclose(t[:n], want, atol=1e-4):
        raise InputError(f"{name!r} is not the sinusoidal position table of the paper: a changed model")


# --- vocabularies -------------------------------------------------------------------------------------------------
def read_vocab(path, family: str, size: int, side: str) -> Vocab:
    """One token per line, in id order (vocab.get_itos()); checked against the family's specials and the size."""
    f = FAMILIES[family]
    text = files.read_text(path)
    itos = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    if len(itos) != size:
        raise InputError(f"{path} has {len(itos):,} tokens but the model's {side} embedding has {size:,} rows: "
                         "give the vocabulary the model was trained with")
    if tuple(itos[:4]) != f.specials:
        raise InputError(f"{path} starts with {itos[:4]}, but {a(family)} vocabulary starts with {list(f.specials)}")
    try:
        return Vocab(itos, dict(zip(f.roles, f.specials)), f.lower)
    except ValueError as e:
        raise InputError(f"{path}: {e}") from None


def rebuilt_vocab(lines: list[str], lang: str, size: int) -> Vocab:
    """The tutorial's vocabulary rebuilt from the training texts by its rules (the same as ours)."""
    vocab = Vocab.build(tokenize(line, lang) for line in lines)
    if len(vocab) != size:
        raise InputError(f"the {lang} vocabulary rebuilt from Multi30k's training texts has {len(vocab):,} tokens, "
                         f"but the model's embedding has {size:,} rows: it was built otherwise (another min_freq, "
                         f"other data); pass --src-vocab and --tgt-vocab, one token per line in id order "
                         "(vocab.get_itos() in your notebook)")
    return vocab


# --- Marian (Hugging Face's MarianMTModel: Helsinki-NLP's opus-mt) ----------------------------------------------
MARIAN_FILES = ("config.json", "source.spm", "target.spm", "vocab.json")  # and the weights, one of:
MARIAN_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
MARIAN_ACTIVATIONS = {"swish": "swish", "silu": "swish", "relu": "relu", "gelu": "gelu"}  # theirs -> ours
MARIAN_LAYER = {"self_attn": "self_attn", "self_attn_layer_norm": "ln_self", "encoder_attn": "cross_attn",
                "encoder_attn_layer_norm": "ln_cross", "fc1": "ffn.fc1", "fc2": "ffn.fc2", "final_layer_norm": "ln_ffn"}
MARIAN_PROJ = {"q_proj": "w_q", "k_proj": "w_k", "v_proj": "w_v", "out_proj": "w_o"}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def marian_folder(source: str) -> Path:
    """The save_pretrained folder SOURCE names, or the hub id's files fetched into the Hugging Face cache."""
    path = Path(source)
    if path.is_dir():
        return path
    if path.exists() or not HUB_ID.match(source):
        raise InputError(f"{source} is not a folder: give the folder save_pretrained wrote (config.json, "
                         "model.safetensors, source.spm, target.spm, vocab.json), or a hub id such as "
                         "Helsinki-NLP/opus-mt-de-en")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise InputError(f"{source} is not a folder here, and fetching it needs huggingface_hub "
                         "(pip install huggingface_hub), or give the folder") from None
    try:
        return Path(snapshot_download(source, allow_patterns=[*MARIAN_FILES, *MARIAN_WEIGHTS, "target_vocab.json",
                                                              "tokenizer_config.json", "generation_config.json"]))
    except Exception as e:  # offline, unknown id, refused: huggingface_hub raises many kinds
        raise InputError(f"could not fetch {source} from the Hugging Face hub ({type(e).__name__}): on a machine "
                         f"that is online, run `hf download {source} --local-dir DIR`, then give DIR") from None


def _json(path: Path, need: bool = True):
    if not path.is_file():
        if need:
            raise InputError(f"{path.parent} has no {path.name}: not a whole Marian folder")
        return None
    value = files.loads(files.read_text(path), path.name)
    if not isinstance(value, dict):
        raise InputError(f"{path} is not a JSON object")
    return value


def marian_weights(folder: Path) -> dict:
    """The folder's tensors, names without the "model." prefix (safetensors, else pytorch_model.bin read with
    weights_only)."""
    if (folder / "model.safetensors").is_file():
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            state = load_file(folder / "model.safetensors")
        except (SafetensorError, OSError) as e:
            raise InputError(f"{folder / 'model.safetensors'} is truncated or not safetensors ({e})") from None
    elif (folder / "pytorch_model.bin").is_file():
        state = read_state_dict(folder / "pytorch_model.bin")
    else:
        sharded = any(folder.glob("*.index.json"))
        raise InputError(f"{folder} has no model.safetensors or pytorch_model.bin"
                         + (": its weights are split in shards, which is not read here" if sharded else ""))
    return {k.removeprefix("model."): v for k, v in state.items()}


def marian_vocab(path: Path, size: int, side: str, pieces: bytes) -> Vocab:
    """vocab.json ({piece: id}) as a Vocab of `size` ids: <unk>, <pad> and </s> its specials, <pad> also its <sos>."""
    mapping = _json(path)
    ids = sorted(mapping.values()) if all(type(i) is int for i in mapping.values()) else None
    if ids != list(range(len(mapping))):
        raise InputError(f"{path} does not give the ids 0..{len(mapping) - 1} once each")
    if len(mapping) != size:
        raise InputError(f"{path} has {len(mapping):,} pieces but the model's {side} embedding has {size:,} rows")
    itos = [None] * size
    for piece, i in mapping.items():
        itos[i] = piece
    try:
        return Vocab(itos, {"unk": "<unk>", "pad": "<pad>", "sos": "<pad>", "eos": "</s>"}, lower=False,
                     pieces=pieces)
    except ValueError as e:
        raise InputError(f"{path}: {e}") from None


def convert_marian(folder: Path) -> tuple:
    """(ModelConfig, our state_dict, source Vocab, target Vocab, generation settings, languages) of a Marian
    save_pretrained folder; InputError in one line naming the first thing that is not a Marian model's."""
    c = _json(folder / "config.json")
    if c.get("model_type") != "marian":
        raise InputError(f"{folder / 'config.json'} says model_type {c.get('model_type')!r}: not a Marian model "
                         "(Helsinki-NLP/opus-mt-*: model_type 'marian')")
    for name in MARIAN_FILES[1:]:
        if not (folder / name).is_file():
            raise InputError(f"{folder} has no {name}: a Marian model needs config.json, source.spm, target.spm, "
                             "vocab.json and its weights")
    for ours, enc, dec in (("heads", "encoder_attention_heads", "decoder_attention_heads"),
                           ("feed-forward width", "encoder_ffn_dim", "decoder_ffn_dim")):
        if c.get(enc) != c.get(dec):
            raise InputError(f"its encoder and decoder differ in {ours} ({enc} {c.get(enc)}, {dec} {c.get(dec)}): "
                             "the model here has one value for both")
    activation = MARIAN_ACTIVATIONS.get(c.get("activation_function"))
    if activation is None:
        raise InputError(f"activation_function {c.get('activation_function')!r} is not one of "
                         f"{', '.join(MARIAN_ACTIVATIONS)}")
    pad, eos = c.get("pad_token_id"), c.get("eos_token_id")
    start = c.get("decoder_start_token_id", pad)
    if start != pad:
        raise InputError(f"decoder_start_token_id {start} is not pad_token_id {pad}: Marian decoding starts from <pad>")
    shared = c.get("share_encoder_decoder_embeddings", True)
    tie = "all" if shared else ("target" if c.get("tie_word_embeddings", True) else "none")
    w = marian_weights(folder)
    table = w.get("shared.weight", w.get("decoder.embed_tokens.weight"))
    if table is None:
        raise InputError("the weights have no shared.weight or decoder.embed_tokens.weight: not a Marian model's")
    tgt_table = table if shared else w.get("decoder.embed_tokens.weight", table)
    src_table = table if shared else w.get("encoder.embed_tokens.weight")
    if src_table is None:
        raise InputError("the embeddings are not shared, and the weights have no encoder.embed_tokens.weight")
    n_enc, n_dec = layer_count(w, "encoder.layers"), layer_count(w, "decoder.layers")
    try:
        cfg = ModelConfig(src_vocab_size=src_table.size(0), tgt_vocab_size=tgt_table.size(0),
                          d_model=tgt_table.size(1), n_enc_layers=n_enc, n_dec_layers=n_dec,
                          n_heads=c.get("encoder_attention_heads"), d_ff=c.get("encoder_ffn_dim"),
                          dropout=float(c.get("dropout", 0.1)), max_positions=c.get("max_position_embeddings"),
                          positions="halves", pad_id=pad, unk_id=_json(folder / "vocab.json").get("<unk>", -1),
                          sos_id=pad, eos_id=eos, activation=activation, embed_scale=bool(c.get("scale_embedding")),
                          tie=tie, source_start=False)
    except (ValueError, TypeError) as e:
        raise InputError(f"its sizes do not make a model here: {e}") from None
    if (n_enc, n_dec) != (c.get("encoder_layers"), c.get("decoder_layers")):
        raise InputError(f"the weights have {n_enc} + {n_dec} layers, config.json says "
                         f"{c.get('encoder_layers')} + {c.get('decoder_layers')}")
    ours = {"tgt_embed.tok.weight": tgt_table, "generator.bias": _logits_bias(w, cfg.tgt_vocab_size)}
    if tie != "all":
        ours["src_embed.tok.weight"] = src_table
    if tie == "none":
        ours["generator.weight"] = _need(w, "lm_head.weight")
    used = {"shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight",
            "final_logits_bias"}
    for side, n in (("encoder", n_enc), ("decoder", n_dec)):
        for i in range(n):
            for theirs, mine in MARIAN_LAYER.items():
                if side == "encoder" and "encoder_attn" in theirs:
                    continue
                parts = ([(f".{p}", f".{q}") for p, q in MARIAN_PROJ.items()] if theirs.endswith("attn")
                         else [("", "")])
                for p, q in parts:
                    for kind in ("weight", "bias"):
                        key = f"{side}.layers.{i}.{theirs}{p}.{kind}"
                        ours[f"{side}.{i}.{mine}{q}.{kind}"] = _need(w, key)
                        used.add(key)
        name = f"{side}.embed_positions.weight"
        if name in w:  # older files keep the table; it must be Marian's formula
            used.add(name)
            check_positions(w[name], cfg.d_model, name, halves=True)
    extra = next((k for k in w if k not in used), None)
    if extra is not None:
        raise InputError(f"{extra!r} is not part of a Marian model ({n_enc} + {n_dec} layers)")
    model = Transformer(cfg)
    expected = model.stored_state()
    for k, v in expected.items():
        if tuple(ours[k].shape) != tuple(v.shape):
            raise InputError(f"{k} has shape {tuple(ours[k].shape)}, but config.json's sizes need {tuple(v.shape)}")
        if not torch.isfinite(ours[k]).all():
            raise InputError(f"{k} holds NaN or infinite values")
    ours = {k: ours[k].float().contiguous() for k in expected}
    pieces = {side: files.read_limited(open(folder / f"{side}.spm", "rb"), f"{side}.spm")
              for side in ("source", "target")}
    separate = (folder / "target_vocab.json").is_file() and not shared
    src_vocab = marian_vocab(folder / "vocab.json", cfg.src_vocab_size, "source", pieces["source"])
    tgt_vocab = marian_vocab(folder / ("target_vocab.json" if separate else "vocab.json"), cfg.tgt_vocab_size,
                             "target", pieces["target"])
    for role in ("pad", "eos", "unk"):
        if {getattr(src_vocab, f"{role}_id"), getattr(tgt_vocab, f"{role}_id")} != {getattr(cfg, f"{role}_id")}:
            raise InputError(f"config.json's {role}_token_id is not the vocabulary's {src_vocab.specials[role]}")
    gen = _json(folder / "generation_config.json", need=False) or {}
    generation = {k: gen[k] for k in ("num_beams", "length_penalty", "early_stopping", "max_length", "bad_words_ids")
                  if k in gen}
    if generation.get("early_stopping", False) not in (False, True, "never"):
        raise InputError(f"generation_config.json's early_stopping {generation['early_stopping']!r} is not true, "
                         "false or \"never\"")
    if type(generation.get("length_penalty", 1.0)) not in (int, float):
        raise InputError(f"generation_config.json's length_penalty {generation['length_penalty']!r} is not a number")
    tok = _json(folder / "tokenizer_config.json", need=False) or {}
    languages = [tok.get("source_lang"), tok.get("target_lang")]
    return cfg, ours, src_vocab, tgt_vocab, generation, languages


def _need(w: dict, key: str) -> torch.Tensor:
    if key not in w:
        raise InputError(f"the weights lack {key!r}: not a whole Marian model")
    return w[key]


def _logits_bias(w: dict, size: int) -> torch.Tensor:
    bias = w.get("final_logits_bias", torch.zeros(1, size))  # Marian adds it to every logit: our generator's bias
    return bias.reshape(-1)


# --- the command --------------------------------------------------------------------------------------------------
def card(family: str, source: Path, digest: str, cfg: ModelConfig, vocab_from: str) -> str:
    f = FAMILIES[family]
    return (f"# Model card: {a(family)} model, converted\n\n"
            f"Family: **{family}**, {f.title}.\n\n"
            f"Source: `{source.name}`, SHA-256 `{digest}`, converted by `python -m model.convert {family}`.\n\n"
            f"Sizes read off the weights: d_model {cfg.d_model}, {cfg.n_enc_layers} + {cfg.n_dec_layers} layers, "
            f"{cfg.n_heads} heads (given), d_ff {cfg.d_ff}, {cfg.positions} positions ({cfg.max_positions}), "
            f"{cfg.norm_position}-LN{' with final norms' if cfg.final_norm else ''}, vocabularies of "
            f"{cfg.src_vocab_size:,} German and {cfg.tgt_vocab_size:,} English tokens ({vocab_from}); "
            f"{cfg.n_params:,} parameters, stored as float32.\n\n"
            "Its names for the parts the page shows: "
            + ", ".join(f"{ours} = `{theirs}`" for ours, theirs in f.names.items()) + ".\n")


def main(argv=None):
    """`python -m model.convert`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli
    from .checkpoint import save_checkpoint

    p = cli.Parser(description=__doc__.split("\n\n")[0] + "\n\n" + USAGE)
    p.add_argument("family", choices=[*FAMILIES, "marian"], help="which tutorial's model the file is, or marian")
    p.add_argument("source", help="the file torch.save(model.state_dict(), ...) wrote; for marian, the folder "
                                  "save_pretrained wrote or a hub id (Helsinki-NLP/opus-mt-de-en)")
    p.add_argument("--out", required=True, help="the checkpoint folder to write")
    p.add_argument("--src-vocab", help="German vocabulary: one token per line, in id order")
    p.add_argument("--tgt-vocab", help="English vocabulary: one token per line, in id order")
    p.add_argument("--heads", type=cli.whole, default=8, help="attention heads per layer (default 8)")
    p.add_argument("--data", default=None, help="the Multi30k folder (the tutorial family's vocabularies are "
                                                "rebuilt from its training texts when no files are given)")
    args = p.parse_args(argv)
    cli.check(args, heads=cli.Range(1, 64))
    if (args.src_vocab is None) != (args.tgt_vocab is None):
        raise InputError("give both --src-vocab and --tgt-vocab, or neither")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file, not a folder")
    t0 = time.time()
    if args.family == "marian":
        return marian_command(args, out, t0)
    source = Path(args.source)
    state = read_state_dict(source)
    cfg, weights = convert_state(args.family, state, args.heads)
    if args.src_vocab is not None:
        src_vocab = read_vocab(args.src_vocab, args.family, cfg.src_vocab_size, "German")
        tgt_vocab = read_vocab(args.tgt_vocab, args.family, cfg.tgt_vocab_size, "English")
        vocab_from = "from the given files"
    elif args.family == "tutorial":
        from .data import default_data_dir

        data = Path(args.data) if args.data else default_data_dir()
        if data is None:
            raise InputError("no Multi30k folder to rebuild the vocabularies from: pass --data DIR, or "
                             "--src-vocab and --tgt-vocab")
        de, en = cli.read_split(data, "train")
        src_vocab = rebuilt_vocab(de, "de", cfg.src_vocab_size)
        tgt_vocab = rebuilt_vocab(en, "en", cfg.tgt_vocab_size)
        vocab_from = "rebuilt from Multi30k's training texts by the tutorial's rules"
    else:
        raise InputError(f"{a(args.family)} model needs its vocabularies: --src-vocab and --tgt-vocab, one token per "
                         "line in id order (vocab.get_itos() in your notebook)")
    model = Transformer(cfg)
    model.load_state_dict(weights)
    digest = files.sha256(source)
    save_checkpoint(model.eval(), src_vocab, tgt_vocab, out, half=False,
                    extra={"family": args.family, "source": source.name, "sha256": digest})
    files.write_text(out / "README.md", card(args.family, source, digest, cfg, vocab_from))
    print(f"{args.family} model converted in {time.time() - t0:.1f} s: {cfg.n_params:,} parameters, "
          f"{cfg.n_enc_layers} + {cfg.n_dec_layers} layers, d_model {cfg.d_model}, vocabularies "
          f"{cfg.src_vocab_size:,} / {cfg.tgt_vocab_size:,} -> {out}")
    print(f"next: python -m model.tables --checkpoint {out} --quick   (the tables the views read), then "
          f"TRANSFORMER_CHECKPOINT={out} streamlit run app.py")
    return 0


def marian_command(args, out: Path, t0: float) -> int:
    from .checkpoint import save_checkpoint

    if args.src_vocab or args.tgt_vocab or args.heads != 8:
        raise InputError("a Marian folder brings its vocabularies and heads: leave out --src-vocab, --tgt-vocab "
                         "and --heads")
    folder = marian_folder(args.source)
    cfg, weights, src_vocab, tgt_vocab, generation, languages = convert_marian(folder)
    model = Transformer(cfg)
    model.load_state_dict(weights, strict=False)  # the tied names are the target table itself
    digest = files.sha256(folder / next(w for w in MARIAN_WEIGHTS if (folder / w).is_file()))
    save_checkpoint(model.eval(), src_vocab, tgt_vocab, out, half=False,
                    extra={"family": "marian", "source": str(args.source), "sha256": digest,
                           "generation": generation, "languages": languages})
    src, tgt = (lang or "?" for lang in languages)
    files.write_text(out / "README.md", (
        f"# Model card: a Marian model, converted\n\n"
        f"Family: **marian**, Hugging Face's MarianMTModel (Helsinki-NLP's opus-mt), {src} to {tgt}.\n\n"
        f"Source: `{args.source}`, weights SHA-256 `{digest}`, converted by `python -m model.convert marian`.\n\n"
        f"Sizes: d_model {cfg.d_model}, {cfg.n_enc_layers} + {cfg.n_dec_layers} layers, {cfg.n_heads} heads, d_ff "
        f"{cfg.d_ff}, {cfg.activation} activation, Marian's sinusoidal positions ({cfg.max_positions}), post-LN, "
        f"embeddings shared: {cfg.tie}; vocabularies of {cfg.src_vocab_size:,} and {cfg.tgt_vocab_size:,} "
        f"SentencePiece pieces; {cfg.n_params:,} parameters, stored as float32. Generation settings: "
        f"{generation or 'none given'}.\n"))
    print(f"marian model converted in {time.time() - t0:.1f} s: {cfg.n_params:,} parameters, "
          f"{cfg.n_enc_layers} + {cfg.n_dec_layers} layers, d_model {cfg.d_model}, vocabularies "
          f"{cfg.src_vocab_size:,} / {cfg.tgt_vocab_size:,} -> {out}")
    print(f"next: TRANSFORMER_CHECKPOINT={out} streamlit run app.py   (python -m model.tables --checkpoint {out} "
          "--corpus FILE builds the tables the views read, and the familiarity note's index from a corpus of yours)")
    return 0


USAGE = """usage examples:
    python -m model.convert tutorial tut6-model.pt --out my-model
    python -m model.convert pytorch transformer.pt --src-vocab de.txt --tgt-vocab en.txt --out my-model
    python -m model.convert annotated model.pt --src-vocab de.txt --tgt-vocab en.txt --heads 8 --out my-model
    python -m model.convert marian Helsinki-NLP/opus-mt-de-en --out opus-mt-de-en"""


if __name__ == "__main__":
    from . import cli

    cli.run(main)
