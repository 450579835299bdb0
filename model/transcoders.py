"""Transcoders: each feed-forward block replaced by a wide, sparse, readable one (docs/contract.md, "Transcoders").

    python -m model.transcoders compare [--checkpoint DIR] [--data-dir DIR]   # variants and widths, measured
    python -m model.transcoders train [--checkpoint DIR] [--data-dir DIR]     # the six dictionaries and their card
    python -m model.transcoders index [--checkpoint DIR] [--data-dir DIR]     # every feature's page, precomputed
    python -m model.transcoders feature enc.2.137 [--checkpoint DIR]          # one feature's page as JSON

A transcoder (Dunefsky, Chlenski and Nanda, "Transcoders find interpretable LLM feature circuits", NeurIPS 2024)
reads what a feed-forward block reads (its input x, D numbers) and writes what it writes (FFN(x)), through F >> D
features of which only a few are active:

    a(x) = TopK(ReLU(x W_enc + b_enc))        (Gao et al., "Scaling and evaluating sparse autoencoders", 2024)
    T(x) = a(x) W_dec + b_dec + x W_skip      (the skip transcoder of Paulo, Shabalin and Belrose, 2025)

with the rows of W_dec of unit length, so that a feature's activation is the length of what it writes. The
variant and the width were chosen by `compare` (the card's "comparison"). A block's error is FFN(x) - T(x): the
page shows it, never hides it. Switching a feature off (or scaling it by s) is a per-call patch of the model's
forward pass (model/extras.py, the site "ffn"): the block writes FFN(x) + (s - 1) a_f(x) d_f, so the error stays
what it was and only that feature changes; the shared weights are never edited.

Feature names are BLOCK.INDEX, counted from 0 as the model's arrays are: "enc.2.137" is feature 137 of the third
encoder layer's block, "dec.0.5" feature 5 of the first decoder layer's.

The dictionaries ship beside the checkpoint: transcoders.safetensors (float16, or int8 with a scale per feature: see
pack), transcoders.json (the recipe and the card: per block the fraction of variance unexplained on the validation
set, L0, the dead and dense fractions, the loss recovered; test2016 BLEU with all six blocks replaced; measured on the
dictionaries as stored), transcoders_index.npz (the feature pages).
Training teacher-forces the model on the Multi30k training pairs (references, dropout off); it runs in the
background, niced, with a progress bar, and resumes after an interruption from its work folder.
"""

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .errors import InputError
from .i18n import _

STACKS = {"enc": "encoder", "dec": "decoder"}
WEIGHTS, CARD, INDEX = "transcoders.safetensors", "transcoders.json", "transcoders_index.npz"
DENSE = 0.1  # a feature active on more than this share of the validation tokens is "dense"
TOP = 8  # top-activating contexts kept per feature
BINS = 16  # the activation histogram's bins, from 0 to the feature's largest activation
EFFECT_WORDS = 5  # words a decoder feature promotes (and suppresses) through the generator
EFFECT_SENTENCES = 4  # an encoder feature's effect: measured on its top sentences


def blocks(cfg) -> list[str]:
    """The feed-forward blocks of a model, in the order of the forward pass: enc.0 .. enc.N-1, dec.0 .. dec.M-1."""
    return [f"enc.{i}" for i in range(cfg.n_enc_layers)] + [f"dec.{i}" for i in range(cfg.n_dec_layers)]


def site(block: str) -> tuple:
    """The patch site of a block's feed-forward output (model/extras.py): ("encoder", 2, "ffn") for "enc.2"."""
    stack, layer = block.split(".")
    return STACKS[stack], int(layer), "ffn"


def block_label(block: str) -> str:
    """On the page: "encoder layer 3" for "enc.2"."""
    stack, layer = block.split(".")
    return (_("encoder layer {layer}") if stack == "enc" else _("decoder layer {layer}")).format(layer=int(layer) + 1)


# the transcoder -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recipe:
    """How one block's transcoder is built and trained (docs/contract.md, "Transcoders")."""

    width: int = 1024  # F features
    k: int = 32  # TopK: active features per token; 0: ReLU with an L1 penalty (Dunefsky et al.)
    skip: bool = True  # the affine skip x W_skip (Paulo et al.)
    l1: float = 0.0  # the L1 coefficient of the ReLU variant
    epochs: int = 16
    batch: int = 4096  # tokens per step
    lr: float = 1e-3  # Adam; linear decay to 0 over the last fifth of the steps
    aux_k: int = 256  # AuxK (Gao et al.): dead features reconstruct the error, with this many at most
    aux_coef: float = 1 / 32
    dead_after: int = 10_000  # a feature that has not fired for this many training tokens is dead (AuxK)
    seed: int = 0
    storage: str = "int8"  # how the dictionaries ship: "int8" (see pack), or "float16"


class Transcoder(nn.Module):
    """One block's transcoder: a(x) = TopK(ReLU(x W_enc + b_enc)) (or ReLU alone, k 0), T(x) = a W_dec + b_dec
    (+ x W_skip)."""

    def __init__(self, d_model: int, width: int, k: int, skip: bool):
        super().__init__()
        self.k = k
        self.W_enc = nn.Parameter(torch.zeros(d_model, width))
        self.b_enc = nn.Parameter(torch.zeros(width))
        self.W_dec = nn.Parameter(torch.zeros(width, d_model))
        self.b_dec = nn.Parameter(torch.zeros(d_model))
        self.W_skip = nn.Parameter(torch.zeros(d_model, d_model)) if skip else None

    @property
    def width(self) -> int:
        return self.W_enc.shape[1]

    def pre(self, x):
        return x @ self.W_enc + self.b_enc

    def activate(self, pre):
        """The features' activations from their pre-activations (..., F): ReLU, and TopK where k > 0."""
        a = F.relu(pre)
        if not self.k or self.k >= a.shape[-1]:
            return a
        values, idx = a.topk(self.k, dim=-1)
        return torch.zeros_like(a).scatter(-1, idx, values)

    def encode(self, x):
        """x (..., D) -> a (..., F)."""
        return self.activate(self.pre(x))

    def decode(self, a, x):
        """a (..., F) and the block's input x (..., D) -> T(x) (..., D)."""
        y = a @ self.W_dec + self.b_dec
        return y if self.W_skip is None else y + x @ self.W_skip

    def forward(self, x):
        """x (..., D) -> (T(x), a(x))."""
        a = self.encode(x)
        return self.decode(a, x), a

    @torch.no_grad()
    def unit_rows(self):
        self.W_dec.div_(self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-8))


def initial(d_model: int, recipe: Recipe, mean_out: torch.Tensor) -> Transcoder:
    """Gao et al.'s start: random unit decoder rows, W_enc their transpose, b_dec the mean output, no skip yet."""
    g = torch.Generator().manual_seed(recipe.seed)
    tc = Transcoder(d_model, recipe.width, recipe.k, recipe.skip)
    with torch.no_grad():
        tc.W_dec.copy_(torch.randn(recipe.width, d_model, generator=g))
        tc.unit_rows()
        tc.W_enc.copy_(tc.W_dec.t())
        tc.b_dec.copy_(mean_out)
    return tc


# the blocks' inputs and outputs ---------------------------------------------------------------------------------
@dataclass
class Activations:
    """Every non-pad position of a teacher-forced corpus: per block, the feed-forward input X and output Y
    (float16, (N, D)); where each row came from (sentence, position) per stack."""

    X: dict
    Y: dict
    where: dict  # {"enc" | "dec": (N, 2) int32: sentence, position}


@torch.no_grad()
def collect(model, src_ids: list, tgt_ids: list, batch_size: int = 128, progress=None) -> Activations:
    """Teacher-force every pair (dropout off) and keep each block's input and output at the non-pad positions."""
    from .data import pad
    from .extras import Extras

    model.eval()
    names = blocks(model.cfg)
    X, Y = {b: [] for b in names}, {b: [] for b in names}
    where = {"enc": [], "dec": []}
    device = next(model.parameters()).device
    order = sorted(range(len(src_ids)), key=lambda i: (len(src_ids[i]), len(tgt_ids[i])))
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        src = pad([src_ids[i] for i in chunk], model.cfg.pad_id).to(device)
        tgt = pad([tgt_ids[i][:-1] for i in chunk], model.cfg.pad_id).to(device)
        capture = {}
        model(src, tgt, Extras(capture=capture, need_weights=False))
        keep = {"enc": src != model.cfg.pad_id, "dec": tgt != model.cfg.pad_id}
        keep["dec"][:, 0] = True  # the start token is a position even where it is the pad id (Marian)
        for stack, m in keep.items():
            rows, pos = m.nonzero(as_tuple=True)
            where[stack].append(torch.stack([torch.tensor(chunk)[rows.cpu()], pos.cpu()], 1).int())
            for layer, cap in enumerate(capture[STACKS[stack]]):
                X[f"{stack}.{layer}"].append(cap["ffn"]["input"][m].half().cpu())
                Y[f"{stack}.{layer}"].append(cap["ffn"]["out"][m].half().cpu())
        if progress is not None:
            progress(len(chunk))
    return Activations({b: torch.cat(v) for b, v in X.items()}, {b: torch.cat(v) for b, v in Y.items()},
                       {s: torch.cat(v) for s, v in where.items()})


def training_pairs(translator, data_dir, split: str = "train") -> tuple[list, list]:
    """A split's pairs as the model reads them in training (model/data.py encode_pairs)."""
    from .data import encode_pairs, load_split

    src, tgt = load_split(data_dir, split)
    return encode_pairs(src, tgt, translator.src_vocab, translator.tgt_vocab, translator.cfg.max_positions,
                        translator.cfg.source_start)


# training ------------------------------------------------------------------------------------------------------
def _trains(recipe: dict) -> dict:
    """How a run trains: its recipe without how the result is stored (a run resumes across storages)."""
    return {k: v for k, v in recipe.items() if k != "storage"}


def recipe_key(recipe: Recipe) -> str:
    """A run's own folder name under the work folder: the first 12 of the sha256 of how it trains, so a run of
    another recipe never writes over a finished one and a run resumes across storages."""
    from .files import dumps

    return hashlib.sha256(dumps(_trains(asdict(recipe)), sort_keys=True).encode()).hexdigest()[:12]


def train_block(X: torch.Tensor, Y: torch.Tensor, recipe: Recipe, work: Path | None = None, progress=None,
                log=None) -> Transcoder:
    """Train one block's transcoder on (X, Y) (float16 rows), resuming from work/ where a run stopped; after each
    epoch the state is saved there (atomically)."""
    torch.manual_seed(recipe.seed)
    N, D = X.shape
    mean = Y.float().mean(0)
    var = (Y.float() - mean).pow(2).sum(-1).mean()  # the FVU's denominator: E||y - mean y||^2
    tc = initial(D, recipe, mean)
    opt = torch.optim.Adam(tc.parameters(), lr=recipe.lr)
    steps_per_epoch = math.ceil(N / recipe.batch)
    total = steps_per_epoch * recipe.epochs
    since = torch.zeros(recipe.width, dtype=torch.long)  # tokens since each feature last fired
    epoch, seconds, t0 = 0, 0.0, time.time()
    state_file = None if work is None else work / "state.pt"
    if state_file is not None and state_file.is_file():
        state = torch.load(state_file, weights_only=True)
        if _trains(state["recipe"]) == _trains(asdict(recipe)):
            tc.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            since, epoch, seconds = state["since"], state["epoch"], state.get("seconds", 0.0)
            if progress is not None:
                progress(epoch * steps_per_epoch)
    for epoch in range(epoch, recipe.epochs):
        g = torch.Generator().manual_seed(recipe.seed * 1000 + epoch)
        perm = torch.randperm(N, generator=g)
        for i in range(steps_per_epoch):
            step = epoch * steps_per_epoch + i
            for group in opt.param_groups:
                group["lr"] = recipe.lr * min(1.0, (total - step) / (0.2 * total))
            idx = perm[i * recipe.batch:(i + 1) * recipe.batch]
            x, y = X[idx].float(), Y[idx].float()
            pre = tc.pre(x)
            a = tc.activate(pre)
            err = y - tc.decode(a, x)
            loss = err.pow(2).sum(-1).mean() / var
            if recipe.k == 0:
                loss = loss + recipe.l1 * a.sum(-1).mean() / var.sqrt()
            fired = (a > 0).any(0)
            since = torch.where(fired, torch.zeros_like(since), since + len(idx))
            dead = since > recipe.dead_after
            if recipe.k and dead.any():
                n_aux = min(recipe.aux_k, int(dead.sum()))
                masked = torch.where(dead, F.relu(pre), torch.zeros_like(pre))
                values, top = masked.topk(n_aux, dim=-1)
                e_hat = torch.zeros_like(pre).scatter(-1, top, values) @ tc.W_dec
                loss = loss + recipe.aux_coef * (err.detach() - e_hat).pow(2).sum(-1).mean() / var
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tc.unit_rows()
            if progress is not None:
                progress(1)
        if state_file is not None:
            tmp = state_file.with_suffix(".tmp")
            torch.save({"recipe": asdict(recipe), "model": tc.state_dict(), "opt": opt.state_dict(), "since": since,
                        "epoch": epoch + 1, "seconds": seconds + time.time() - t0}, tmp)
            os.replace(tmp, state_file)
        if log is not None:
            log(f"epoch {epoch + 1}/{recipe.epochs}: loss {float(loss.detach()):.4f}")
    tc.seconds = seconds + time.time() - t0  # training time over every run of it (the card's)
    return tc.eval()


# measuring ------------------------------------------------------------------------------------------------------
@torch.no_grad()
def block_measures(tc: Transcoder, X: torch.Tensor, Y: torch.Tensor, batch: int = 8192) -> dict:
    """The card's measures of one block on held-out rows: fvu (sum ||y - T(x)||^2 / sum ||y - mean y||^2), l0 (mean
    active features per token), dead (share of features never active), dense (share active on more than DENSE of
    the tokens)."""
    mean = Y.float().mean(0)
    sse = sst = l0 = 0.0
    counts = torch.zeros(tc.width)
    for i in range(0, len(X), batch):
        x, y = X[i:i + batch].float(), Y[i:i + batch].float()
        y_hat, a = tc(x)
        sse += float((y - y_hat).pow(2).sum())
        sst += float((y - mean).pow(2).sum())
        active = a > 0
        l0 += float(active.sum())
        counts += active.sum(0).float()
    n = len(X)
    return {"fvu": sse / sst, "l0": l0 / n, "dead": float((counts == 0).float().mean()),
            "dense": float((counts / n > DENSE).float().mean()), "tokens": n}


def replace_patch(dicts: dict, which=None) -> dict:
    """A patch (model/extras.py) that replaces the named blocks' outputs by their transcoders' (no error term)."""
    return {site(b): (lambda out, x, tc=tc: tc(x.to(tc.W_enc.dtype))[0].to(out.dtype))
            for b, tc in dicts.items() if which is None or b in which}


def zero_patch(which) -> dict:
    """A patch that zeroes the named blocks' outputs (the loss recovered's floor)."""
    return {site(b): (lambda out, x: torch.zeros_like(out)) for b in which}


@torch.no_grad()
def corpus_loss(model, src_ids, tgt_ids, patch=None, batch_size: int = 128) -> float:
    """Mean cross-entropy per target token, teacher-forced, with a patch."""
    from .data import pad
    from .extras import Extras

    total = count = 0.0
    device = next(model.parameters()).device
    for start in range(0, len(src_ids), batch_size):
        src = pad(src_ids[start:start + batch_size], model.cfg.pad_id).to(device)
        tgt = pad(tgt_ids[start:start + batch_size], model.cfg.pad_id).to(device)
        logits = model(src, tgt[:, :-1], Extras(patch=patch, need_weights=False)).logits
        gold = tgt[:, 1:]
        loss = F.cross_entropy(logits.float().transpose(1, 2), gold, ignore_index=model.cfg.pad_id, reduction="sum")
        total += float(loss)
        count += int((gold != model.cfg.pad_id).sum())
    return total / count


def corpus_bleu(translator, src_lines, ref_lines, patch=None) -> float:
    """Greedy corpus BLEU (model/metrics.py's), with a patch on every step."""
    from .metrics import bleu

    hyps = [r.text for r in translator.translate_batch(src_lines, with_maps=False, patch=patch)]
    return bleu(hyps, ref_lines, translator.tgt_vocab.pieces is not None)


# the dictionaries on disk ---------------------------------------------------------------------------------------
STORAGES = ("float16", "int8")


def _scale_dim(name: str) -> int:
    """The dimension an int8 matrix's scale runs across: one scale per feature (W_enc's columns, W_dec's rows) and
    per output number (W_skip's columns)."""
    return 0 if name == "W_dec" else 1


def pack(dicts: dict, storage: str = "float16") -> dict:
    """The dictionaries as stored: every parameter in float16; or, for "int8", each weight matrix W as int8 Q with
    one float16 scale s per feature (per output column for W_skip), s = max|W| / 127 over that feature's numbers,
    Q = round(W / s), read back as Q * s (the biases stay float16)."""
    if storage not in STORAGES:
        raise InputError(f"storage is one of {', '.join(STORAGES)}, not {storage!r}")
    state = {}
    for b, tc in dicts.items():
        for name, p in tc.named_parameters():
            p = p.detach().float()
            key = f"{b}.{name}"
            if storage == "int8" and p.dim() == 2:
                d = _scale_dim(name)
                scale = (p.abs().amax(dim=1 - d) / 127).clamp_min(1e-12).half()
                s = scale.float().unsqueeze(1 - d)
                state[key] = (p / s).round().clamp(-127, 127).to(torch.int8).contiguous()
                state[key + ".scale"] = scale.contiguous()
            else:
                state[key] = p.half().contiguous()
    return state


def unpack(state: dict, blocks: list, k: int, skip: bool, dtype=torch.float32) -> dict:
    """{block: Transcoder} from a stored state (either storage: int8 matrices are told by their dtype)."""
    dicts = {}
    for b in blocks:
        D, width = state[f"{b}.W_enc"].shape
        tc = Transcoder(D, width, k, skip)
        params = {}
        for name, _param in tc.named_parameters():
            t = state[f"{b}.{name}"]
            if t.dtype == torch.int8:
                t = t.float() * state[f"{b}.{name}.scale"].float().unsqueeze(1 - _scale_dim(name))
            params[name] = t.to(dtype)
        tc.load_state_dict(params)
        dicts[b] = tc.eval().requires_grad_(False)
    return dicts


def stored(dicts: dict, storage: str) -> dict:
    """The dictionaries exactly as they will read back from disk (the card measures these)."""
    one = next(iter(dicts.values()))
    return unpack(pack(dicts, storage), list(dicts), one.k, one.W_skip is not None)


def save(folder: Path, dicts: dict, card: dict):
    from safetensors.torch import save_file

    state = pack(dicts, card["recipe"].get("storage", "float16"))
    tmp = folder / (WEIGHTS + ".tmp")
    save_file(state, tmp, metadata={"format": "pt"})
    os.chmod(tmp, 0o644)  # readable by the server's user, as the checkpoint's other files
    os.replace(tmp, folder / WEIGHTS)
    from . import files

    files.write_text(folder / CARD, files.dumps(card, indent=1))


def load(folder, device="cpu", dtype=torch.float32) -> tuple[dict, dict]:
    """({block: Transcoder}, card) from a checkpoint folder; InputError when it has none."""
    from safetensors.torch import load_file

    folder = Path(folder)
    if not (folder / WEIGHTS).is_file() or not (folder / CARD).is_file():
        raise InputError(f"{folder} has no transcoders: train them with `python -m model.transcoders train "
                         f"--checkpoint {folder}`")
    card = json.loads((folder / CARD).read_text())
    recipe = card["recipe"]
    dicts = unpack(load_file(folder / WEIGHTS), card["blocks"], recipe["k"], recipe["skip"], dtype)
    return {b: tc.to(device) for b, tc in dicts.items()}, card


# features: names, interventions, one sentence's ------------------------------------------------------------------
def parse_feature(name: str, dicts: dict) -> tuple[str, int]:
    """"enc.2.137" -> ("enc.2", 137); InputError naming the blocks and the width when it is no feature."""
    parts = str(name).strip().split(".")
    block = ".".join(parts[:2])
    if len(parts) != 3 or block not in dicts or not parts[2].isdigit() or int(parts[2]) >= dicts[block].width:
        width = next(iter(dicts.values())).width if dicts else 0
        raise InputError(_("{name!r} is not a feature: write BLOCK.INDEX, BLOCK one of {blocks} and INDEX from 0 to "
                           "{last}, e.g. enc.2.137").format(name=name, blocks=", ".join(dicts), last=width - 1))
    return block, int(parts[2])


def parse_edits(spec: str | None, dicts: dict) -> dict:
    """"enc.2.137=0,dec.1.5=2.5" -> {("enc.2", 137): 0.0, ("dec.1", 5): 2.5}: features switched off (0) or scaled;
    a feature without "=s" is switched off. Scales from -10 to 10."""
    edits = {}
    for item in filter(None, (p.strip() for p in (spec or "").split(","))):
        name, _eq, scale = item.partition("=")
        try:
            s = float(scale) if scale else 0.0
        except ValueError:
            s = math.nan
        if not math.isfinite(s) or abs(s) > 10:
            raise InputError(_("{item!r}: a feature's scale is a number from -10 to 10 (0 switches it off)").format(
                item=item))
        edits[parse_feature(name, dicts)] = s
    return edits


def edit_patch(dicts: dict, edits: dict) -> dict:
    """A patch (model/extras.py) that scales features: the block writes FFN(x) + sum over its edited features of
    (s - 1) a_f(x) d_f. Its error FFN(x) - T(x) and every other feature stay as they were."""
    per_block = {}
    for (block, f), s in edits.items():
        per_block.setdefault(block, []).append((f, s))

    def make(tc, items):
        idx = torch.tensor([f for f, _s in items], device=tc.W_dec.device)
        scale = torch.tensor([s - 1.0 for _f, s in items], device=tc.W_dec.device)

        def edit(out, x):
            a = tc.encode(x.to(tc.W_enc.dtype))[..., idx]  # (..., n)
            return out + ((a * scale) @ tc.W_dec[idx]).to(out.dtype)
        return edit

    return {site(b): make(dicts[b], items) for b, items in per_block.items()}


@dataclass(frozen=True)
class BlockFeatures:
    """One block's features on one output: per position (a source token, or a decoding step), the strongest
    features [(feature, activation)], and the error ||FFN(x) - T(x)|| beside ||FFN(x)||."""

    block: str
    tokens: tuple  # the positions' tokens: the source's (encoder), the decoder inputs (decoder)
    top: tuple  # per position: ((index, activation), ...) strongest first
    error: tuple  # per position: ||FFN(x) - T(x)||
    norm: tuple  # per position: ||FFN(x)||


@torch.no_grad()
def sentence_features(translator, dicts: dict, forced, top: int = 5) -> list:
    """Every block's strongest features at every position of one forced pass (Translator.force / capture)."""
    capture = translator.capture(forced)
    out = []
    for b, tc in dicts.items():
        stack, layer = b.split(".")
        ffn = capture[STACKS[stack]][int(layer)]["ffn"]
        x, y = ffn["input"][0].float(), ffn["out"][0].float()
        y_hat, a = tc(x)
        values, idx = a.topk(min(top, a.shape[-1]), dim=-1)
        tops = tuple(tuple((int(i), float(v)) for i, v in zip(ii, vv) if v > 0)
                     for ii, vv in zip(idx.tolist(), values.tolist()))
        tokens = forced.src_tokens if stack == "enc" else forced.tgt_tokens
        out.append(BlockFeatures(b, tuple(tokens), tops, tuple((y - y_hat).norm(dim=-1).tolist()),
                                 tuple(y.norm(dim=-1).tolist())))
    return out


# the commands ------------------------------------------------------------------------------------------------
COMPARED = (  # (name, Recipe fields): the variants and widths `compare` measures (the card's "comparison")
    ("TopK k32 skip 4x", {"width": 1024}),
    ("TopK k32 skip 8x", {}),
    ("TopK k32 skip 16x", {"width": 4096}),
    ("TopK k32 8x", {"skip": False}),
    ("TopK k16 skip 8x", {"k": 16}),
    ("TopK k64 skip 8x", {"k": 64}),
    ("ReLU L1 8x", {"k": 0, "skip": False, "l1": 0.01}),
)
COMPARE_SENTENCES = 8000  # training pairs each variant is trained on in `compare`
COMPARE_BLOCKS = ("enc.1", "dec.1")
CHOICE = {"width": 1024, "k": 32, "skip": True}  # what ships: choose_run over every full run (transcoders_runs.json)
MAX_L0 = 32  # the choice's sparsity cap: the configurations with more active features per token are not chosen
MAX_BLEU_DROP = 1.0  # the gates: test2016 BLEU within 1.0 of the model's with all six blocks replaced,
MAX_DEAD = 0.2  # and at most 20% of each block's features dead (never active on the validation set)


def work_folder(folder: Path) -> Path:
    """Where `train` keeps its resumable state: runs/transcoders/<checkpoint folder>-<first 12 of its sha256>."""
    from .checkpoint import weights_sha256

    return Path(__file__).resolve().parents[1] / "runs/transcoders" / f"{folder.name}-{weights_sha256(folder)[:12]}"


def _bar(total, desc, disable):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="step", disable=disable, dynamic_ncols=True)


def compare(translator, data_dir, progress: bool = True, log=print) -> list:
    """Train each variant of COMPARED on COMPARE_SENTENCES training pairs for two blocks (enc.1, dec.1) and measure
    it on the validation set: fvu, l0, dead, dense, and the loss recovered with that block replaced."""
    src, tgt = training_pairs(translator, data_dir)
    train = collect(translator.model, src[:COMPARE_SENTENCES], tgt[:COMPARE_SENTENCES])
    vsrc, vtgt = training_pairs(translator, data_dir, "val")
    val = collect(translator.model, vsrc, vtgt)
    model = translator.model
    clean = corpus_loss(model, vsrc, vtgt)
    zero = {b: corpus_loss(model, vsrc, vtgt, zero_patch([b])) for b in COMPARE_BLOCKS}
    rows = []
    for name, fields in COMPARED:
        recipe = Recipe(**{**CHOICE, **fields, "epochs": 4})
        for b in COMPARE_BLOCKS:
            t0 = time.time()
            steps = math.ceil(len(train.X[b]) / recipe.batch) * recipe.epochs
            with _bar(steps, f"{name} {b}", not progress) as bar:
                tc = train_block(train.X[b], train.Y[b], recipe, progress=bar.update)
            m = block_measures(tc, val.X[b], val.Y[b])
            replaced = corpus_loss(model, vsrc, vtgt, replace_patch({b: tc}))
            m.update(name=name, block=b, recipe=asdict(recipe), loss=replaced,
                     loss_recovered=(zero[b] - replaced) / (zero[b] - clean), seconds=round(time.time() - t0, 1))
            rows.append(m)
            log(f"{name} {b}: fvu {m['fvu']:.4f} l0 {m['l0']:.1f} dead {m['dead']:.3f} dense {m['dense']:.3f} "
                f"loss recovered {m['loss_recovered']:.4f} ({m['seconds']} s)")
    return rows


def choose(rows: list) -> str:
    """The chosen configuration: the highest mean loss recovered over the compared blocks, among those with at most
    MAX_L0 active features per token and at most 20% dead features on every block."""
    names = dict.fromkeys(r["name"] for r in rows)
    ok = [n for n in names if all(r["l0"] <= MAX_L0 and r["dead"] <= MAX_DEAD for r in rows if r["name"] == n)]
    return max(ok, key=lambda n: np.mean([r["loss_recovered"] for r in rows if r["name"] == n]))


def _within_bleu(run: dict) -> bool:
    """A full run's card (or its line in transcoders_runs.json) within the BLEU gate (MAX_BLEU_DROP)."""
    return run["test2016_bleu"] - run["test2016_bleu_all_replaced"] <= MAX_BLEU_DROP


def meets_gates(run: dict) -> bool:
    """Whether a full run's card (its measures and test2016 BLEU) meets both gates (MAX_BLEU_DROP, MAX_DEAD)."""
    return _within_bleu(run) and all(m["dead"] <= MAX_DEAD for m in run["measures"].values())


def choose_run(runs: list) -> dict:
    """The configuration that ships: among the full runs that meet both gates, the one with the highest loss
    recovered with all six blocks replaced; where none does, among those within the BLEU gate, the one whose worst
    block has the fewest dead features. Its width, k and skip. (`compare`'s short runs, 8,000 pairs for 4 epochs,
    leave no feature dead, so they rank the variants but cannot see the dead gate; the full runs can.)"""
    both = [r for r in runs if meets_gates(r)]
    if both:
        best = max(both, key=lambda r: r["loss_recovered_all"])
    else:
        best = min(filter(_within_bleu, runs), key=lambda r: max(m["dead"] for m in r["measures"].values()))
    return {k: best["recipe"][k] for k in ("width", "k", "skip")}


def card_measures(translator, dicts: dict, data_dir, progress: bool = True) -> dict:
    """The card: per block (validation) fvu, l0, dead, dense, loss recovered; the loss with all blocks replaced;
    test2016 greedy BLEU of the model and with all six blocks replaced by their transcoders (no error term)."""
    from .data import load_split

    model = translator.model
    vsrc, vtgt = training_pairs(translator, data_dir, "val")
    val = collect(model, vsrc, vtgt)
    clean = corpus_loss(model, vsrc, vtgt)
    per_block = {}
    for b, tc in dicts.items():
        m = block_measures(tc, val.X[b], val.Y[b])
        zero = corpus_loss(model, vsrc, vtgt, zero_patch([b]))
        replaced = corpus_loss(model, vsrc, vtgt, replace_patch({b: tc}))
        m.update(loss=replaced, loss_zero=zero, loss_recovered=(zero - replaced) / (zero - clean))
        per_block[b] = m
    all_loss = corpus_loss(model, vsrc, vtgt, replace_patch(dicts))
    zero_all = corpus_loss(model, vsrc, vtgt, zero_patch(list(dicts)))
    test_src, test_ref = load_split(data_dir, "test")
    bleu_model = corpus_bleu(translator, test_src, test_ref)
    bleu_all = corpus_bleu(translator, test_src, test_ref, replace_patch(dicts))
    return {"measures": per_block, "val_loss": clean, "val_loss_all_replaced": all_loss,
            "val_loss_all_zero": zero_all,
            "loss_recovered_all": (zero_all - all_loss) / (zero_all - clean),
            "test2016_bleu": bleu_model, "test2016_bleu_all_replaced": bleu_all,
            "bleu_drop": bleu_model - bleu_all}


def train(translator, folder: Path, data_dir, recipe: Recipe, progress: bool = True, log=print,
          limit: int = 0) -> dict:
    """Train the six dictionaries (resumable, runs/transcoders/...), measure their card, save both beside the
    checkpoint. limit: the first `limit` training pairs only (a first look; 0: all)."""
    t0 = time.time()
    src, tgt = training_pairs(translator, data_dir)
    src, tgt = src[:limit or None], tgt[:limit or None]
    log(f"collecting the blocks' inputs and outputs over {len(src)} training pairs")
    acts = collect(translator.model, src, tgt)
    names = blocks(translator.cfg)
    work = work_folder(folder) / (f"limit{limit}" if limit else "all") / recipe_key(recipe)
    steps = sum(math.ceil(len(acts.X[b]) / recipe.batch) * recipe.epochs for b in names)
    dicts = {}
    with _bar(steps, "transcoders", not progress) as bar:
        for b in names:
            (work / b).mkdir(parents=True, exist_ok=True)
            dicts[b] = train_block(acts.X[b], acts.Y[b], recipe, work / b, bar.update,
                                   log=lambda m, b=b: bar.write(f"{b} {m}"))
    train_seconds = time.time() - t0
    del acts
    block_seconds = round(sum(tc.seconds for tc in dicts.values()))
    dicts = stored(dicts, recipe.storage)  # the card measures what ships
    log("measuring the card (validation; test2016 BLEU with all blocks replaced)")
    card = {"recipe": asdict(recipe), "blocks": names}
    card.update(card_measures(translator, dicts, data_dir, progress))
    card["train_pairs"] = len(src)
    card["seconds"] = {"train_blocks": block_seconds,
                       "this_run": round(time.time() - t0), "this_run_training": round(train_seconds)}
    comparison = folder / "transcoders_compare.json"
    if comparison.is_file():
        card["comparison"] = json.loads(comparison.read_text())
    save(folder, dicts, card)
    return card


def page_summary(card: dict) -> str:
    b = card["measures"]
    return " · ".join(f"{k}: fvu {v['fvu']:.3f}, L0 {v['l0']:.1f}, dead {v['dead']:.1%}" for k, v in b.items())


# the feature pages ------------------------------------------------------------------------------------------------
def direction_effect(model, block: str, tc: Transcoder) -> torch.Tensor:
    """(F, V): how each feature's decoder direction d_f reads through the generator, as the logit lens reads the
    stream: W_gen (gamma * d_f), gamma the weight of the LayerNorm the block's output passes next (post-LN: its own
    layer's; pre-LN: the decoder's final norm)."""
    stack, layer = block.split(".")
    ln = model.dec_norm if model.cfg.final_norm else model.decoder[int(layer)].ln_ffn
    return (tc.W_dec * ln.weight) @ model.generator.weight.t()


@torch.no_grad()
def switched_off_effect(model, tc: Transcoder, block: str, src_ids, tgt_ids, rows: list, batch: int = 96):
    """For each (feature, sentence) row: the change in the summed log p of the sentence's written words when the
    encoder feature is switched off at every position, and the position of the word that loses the most."""
    from .data import pad
    from .extras import Extras

    out = []
    for start in range(0, len(rows), batch):
        chunk = rows[start:start + batch]
        src = pad([src_ids[s] for _f, s in chunk], model.cfg.pad_id)
        tgt = pad([tgt_ids[s] for _f, s in chunk], model.cfg.pad_id)
        feats = torch.tensor([f for f, _s in chunk])

        def edit(out_, x):
            a = tc.encode(x).gather(-1, feats[:, None, None].expand(-1, x.shape[1], 1))  # (B, S, 1)
            return out_ - a * tc.W_dec[feats][:, None, :]

        gold = tgt[:, 1:]
        keep = gold != model.cfg.pad_id
        lp = []
        for patch in (None, {site(block): edit}):
            logits = model(src, tgt[:, :-1], Extras(patch=patch, need_weights=False)).logits.float()
            lp.append(logits.log_softmax(-1).gather(-1, gold[..., None]).squeeze(-1) * keep)
        delta = lp[1] - lp[0]  # (B, T)
        out += list(zip(delta.sum(-1).tolist(), delta.argmin(-1).tolist()))
    return out


def label(tokens: list) -> str:
    """A feature's short label: its most frequent tokens among its top contexts (three at most), most frequent first."""
    counts = {}
    for t in tokens:
        counts[t] = counts.get(t, 0) + 1
    return " · ".join(sorted(counts, key=lambda t: -counts[t])[:3])


@torch.no_grad()
def build_index(translator, dicts: dict, data_dir, progress: bool = True, log=print, limit: int = 0) -> dict:
    """Every feature's page, as arrays (transcoders_index.npz): over the training pairs, per block: density, the
    largest activation, a BINS-bin histogram from 0 to it, the TOP strongest contexts (sentence, position,
    activation); the effect (decoder: the EFFECT_WORDS words its direction promotes and suppresses; encoder: the
    change in log p of the written words when it is switched off, on its EFFECT_SENTENCES top sentences); labels.
    limit: the first `limit` training pairs only (0: all)."""
    model = translator.model
    src, tgt = training_pairs(translator, data_dir)
    src, tgt = src[:limit or None], tgt[:limit or None]
    acts = collect(model, src, tgt)
    arrays = {"src_ids": np.concatenate(src).astype(np.int32), "src_offsets": np.cumsum([0] + [len(s) for s in src]),
              "tgt_ids": np.concatenate(tgt).astype(np.int32), "tgt_offsets": np.cumsum([0] + [len(t) for t in tgt])}
    labels = {}
    itos_src, itos_tgt = translator.src_vocab.itos, translator.tgt_vocab.itos
    for b, tc in dicts.items():
        stack = b.split(".")[0]
        where = acts.where[stack].numpy()
        X = acts.X[b]
        N, Fw = len(X), tc.width
        k = tc.k or Fw
        feat, val = [], []
        for i in range(0, N, 8192):
            a = tc.encode(X[i:i + 8192].float())
            v, f = a.topk(min(k, Fw), dim=-1)
            feat.append(f.numpy().astype(np.int32))
            val.append(v.numpy())
        feat, val = np.concatenate(feat).ravel(), np.concatenate(val).ravel()
        row = np.repeat(np.arange(N), min(k, Fw))
        on = val > 0
        feat, val, row = feat[on], val[on], row[on]
        count = np.bincount(feat, minlength=Fw)
        peak = np.zeros(Fw, np.float32)
        np.maximum.at(peak, feat, val)
        bins = np.minimum((val / np.maximum(peak[feat], 1e-12) * BINS).astype(np.int64), BINS - 1)
        hist = np.bincount(feat * BINS + bins, minlength=Fw * BINS).reshape(Fw, BINS)
        order = np.lexsort((-val, feat))
        starts = np.searchsorted(feat[order], np.arange(Fw))
        top_sent = np.full((Fw, TOP), -1, np.int32)
        top_pos = np.full((Fw, TOP), -1, np.int32)
        top_val = np.zeros((Fw, TOP), np.float32)
        for f in range(Fw):
            picked = order[starts[f]:starts[f] + min(TOP, count[f])]
            top_sent[f, :len(picked)] = where[row[picked], 0]
            top_pos[f, :len(picked)] = where[row[picked], 1]
            top_val[f, :len(picked)] = val[picked]
        arrays.update({f"{b}.density": count / N, f"{b}.peak": peak, f"{b}.hist": hist.astype(np.int32),
                       f"{b}.top_sent": top_sent, f"{b}.top_pos": top_pos, f"{b}.top_val": top_val})
        names = []
        for f in range(Fw):
            if stack == "enc":
                toks = [itos_src[src[s][p]] for s, p in zip(top_sent[f], top_pos[f]) if s >= 0]
            else:
                toks = [itos_tgt[tgt[s][p + 1]] for s, p in zip(top_sent[f], top_pos[f]) if s >= 0]
            names.append(label(toks))
        labels[b] = names
        if stack == "dec":
            eff = direction_effect(model, b, tc)
            up_v, up_i = eff.topk(EFFECT_WORDS, dim=-1)
            down_v, down_i = (-eff).topk(EFFECT_WORDS, dim=-1)
            arrays.update({f"{b}.up_ids": up_i.numpy().astype(np.int32), f"{b}.up": up_v.numpy(),
                           f"{b}.down_ids": down_i.numpy().astype(np.int32), f"{b}.down": -down_v.numpy()})
        else:
            per_f = {}  # each feature's distinct top sentences, EFFECT_SENTENCES at most
            for f in range(Fw):
                found = list(dict.fromkeys(int(x) for x in top_sent[f] if x >= 0))[:EFFECT_SENTENCES]
                if found:
                    per_f[f] = found
            rows = [(f, s) for f, ss in per_f.items() for s in ss]
            log(f"{b}: switching {len(per_f)} features off on {len(rows)} sentences")
            measured = switched_off_effect(model, tc, b, src, tgt, rows)
            delta = np.full((Fw, EFFECT_SENTENCES), np.nan, np.float32)
            word_sent = np.full((Fw, EFFECT_SENTENCES), -1, np.int32)
            word_pos = np.full((Fw, EFFECT_SENTENCES), -1, np.int32)
            seen = {}
            for (f, s), (d, p) in zip(rows, measured):
                j = seen.get(f, 0)
                seen[f] = j + 1
                delta[f, j], word_sent[f, j], word_pos[f, j] = d, s, p
            arrays.update({f"{b}.off_delta": delta, f"{b}.off_sent": word_sent, f"{b}.off_pos": word_pos})
        log(f"{b}: indexed {Fw} features ({int((count == 0).sum())} never active on the training pairs)")
    from . import files

    arrays["labels"] = np.frombuffer(files.dumps(labels).encode(), dtype=np.uint8)
    return arrays


_INDEX_CACHE = {}


def read_index(folder) -> dict:
    """The index beside a checkpoint, loaded once per process and folder (a feature page then reads in
    milliseconds); a file written again since is read again."""
    path = Path(folder) / INDEX
    key = (str(path), path.stat().st_mtime if path.is_file() else None)
    if key not in _INDEX_CACHE:
        if not path.is_file():
            raise InputError(f"{folder} has no feature pages: build them with `python -m model.transcoders index "
                             f"--checkpoint {folder}`")
        with np.load(path) as z:
            data = {k: z[k] for k in z.files}
        data["labels"] = json.loads(data["labels"].tobytes().decode())
        for stale in [k for k in _INDEX_CACHE if k[0] == key[0]]:
            del _INDEX_CACHE[stale]
        _INDEX_CACHE[key] = data
    return _INDEX_CACHE[key]


def _sentence(index: dict, side: str, s: int) -> list:
    o = index[f"{side}_offsets"]
    return index[f"{side}_ids"][o[s]:o[s + 1]].tolist()


def feature_page(translator, index: dict, name: str, dicts: dict) -> dict:
    """One feature's page as plain values (the CLI's JSON, the page's panel)."""
    block, f = parse_feature(name, dicts)
    stack = block.split(".")[0]
    itos_src, itos_tgt = translator.src_vocab.itos, translator.tgt_vocab.itos
    peak = float(index[f"{block}.peak"][f])
    contexts = []
    for s, p, v in zip(index[f"{block}.top_sent"][f], index[f"{block}.top_pos"][f], index[f"{block}.top_val"][f]):
        if s < 0:
            continue
        s, p = int(s), int(p)
        if stack == "enc":
            contexts.append({"sentence": s, "tokens": [itos_src[i] for i in _sentence(index, "src", s)],
                             "position": p, "activation": float(v)})
        else:
            ids = _sentence(index, "tgt", s)
            contexts.append({"sentence": s, "tokens": [itos_tgt[i] for i in ids[:p + 1]], "position": p,
                             "next": itos_tgt[ids[p + 1]], "activation": float(v)})
    if stack == "dec":
        effect = {"promotes": [(itos_tgt[i], float(x)) for i, x in zip(index[f"{block}.up_ids"][f],
                                                                      index[f"{block}.up"][f])],
                  "suppresses": [(itos_tgt[i], float(x)) for i, x in zip(index[f"{block}.down_ids"][f],
                                                                        index[f"{block}.down"][f])]}
    else:
        measured = []
        for d, s, p in zip(index[f"{block}.off_delta"][f], index[f"{block}.off_sent"][f],
                           index[f"{block}.off_pos"][f]):
            if s >= 0:
                ids = _sentence(index, "tgt", int(s))
                measured.append({"sentence": int(s), "delta_logp": float(d), "word": itos_tgt[ids[int(p) + 1]]})
        effect = {"switched_off": measured,
                  "mean_delta_logp": float(np.mean([m["delta_logp"] for m in measured])) if measured else None}
    return {"feature": f"{block}.{f}", "block": block, "where": block_label(block),
            "label": index["labels"][block][f], "density": float(index[f"{block}.density"][f]), "peak": peak,
            "histogram": {"edges": np.linspace(0, peak, BINS + 1).tolist(),
                          "counts": index[f"{block}.hist"][f].tolist()},
            "contexts": contexts, "effect": effect}


# the command line --------------------------------------------------------------------------------------------------
def _parser():
    from . import cli

    p = cli.Parser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, what in (("compare", "measure the variants and widths on two blocks"),
                       ("train", "train the six dictionaries and write their card"),
                       ("index", "precompute every feature's page"),
                       ("feature", "print one feature's page as JSON")):
        s = sub.add_parser(name, help=what, description=what)
        if name == "feature":
            s.add_argument("name", help="BLOCK.INDEX, e.g. enc.2.137")
        else:
            s.add_argument("--data-dir", default=None, help="the Multi30k folder (default: $MULTI30K_DIR, else "
                                                            "../shared/data/multi30k)")
            s.add_argument("--no-progress", action="store_true", help="no progress bar")
            s.add_argument("--limit", type=cli.whole, default=0, help="the first N training pairs only (0: all)")
        if name == "train":
            s.add_argument("--width", type=cli.whole, default=CHOICE["width"], help="features per block")
            s.add_argument("--k", type=cli.whole, default=CHOICE["k"], help="active features per token (TopK)")
            s.add_argument("--epochs", type=cli.whole, default=Recipe.epochs, help="passes over the training pairs")
            s.add_argument("--dead-after", type=cli.whole, default=Recipe.dead_after,
                           help="training rows without firing after which a feature counts as dead (AuxK)")
            s.add_argument("--storage", choices=STORAGES, default=Recipe.storage,
                           help="how the dictionaries ship: int8 with a float16 scale per feature, or float16")
        cli.add_checkpoint(s)
        cli.add_device(s)
    return p


def main(argv=None):
    from . import cli

    return cli.entry_point(_main)(argv)


def _main(argv=None):
    from . import cli, files
    from .checkpoint import checkpoint_folder
    from .data import default_data_dir

    args = _parser().parse_args(argv)
    translator = cli.load_translator(args)
    folder = checkpoint_folder(args.checkpoint)
    if args.cmd == "feature":
        dicts = load(folder, translator.device)[0]
        print(files.dumps(feature_page(translator, read_index(folder), args.name, dicts), indent=1))
        return 0
    data_dir = args.data_dir or default_data_dir()
    cli.read_split(data_dir, "val")  # a missing data set is one line before any work
    if hasattr(os, "nice"):
        os.nice(10)  # a background job: the page and the tests go first
    progress = not args.no_progress
    if args.cmd == "compare":
        rows = compare(translator, data_dir, progress)
        result = {"rows": rows, "chosen": choose(rows), "rule": choose.__doc__.split(": ", 1)[1].strip()}
        files.write_text(folder / "transcoders_compare.json", files.dumps(result, indent=1))
        print(files.dumps({"chosen": result["chosen"], "out": str(folder / "transcoders_compare.json")}))
    elif args.cmd == "train":
        if args.width < 1 or args.k < 0 or args.epochs < 1 or args.dead_after < 1:
            raise InputError("--width, --epochs and --dead-after are at least 1, --k at least 0")
        card = train(translator, folder, data_dir, Recipe(width=args.width, k=args.k, epochs=args.epochs,
                                                          dead_after=args.dead_after, storage=args.storage), progress,
                     limit=args.limit)
        print(files.dumps({"out": str(folder / WEIGHTS), "bleu": card["test2016_bleu"],
                           "bleu_all_replaced": card["test2016_bleu_all_replaced"], "blocks": page_summary(card)}))
    else:
        dicts = load(folder, translator.device)[0]
        arrays = build_index(translator, dicts, data_dir, progress, limit=args.limit)
        tmp = folder / (INDEX + ".tmp.npz")
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, folder / INDEX)
        print(files.dumps({"out": str(folder / INDEX)}))
    return 0


if __name__ == "__main__":
    from . import cli

    cli.run(main)


@dataclass(frozen=True)
class BlockLogits:
    """How much of each written word's logit came through each decoder feed-forward block (model/contributions.py
    direct_logits): per step and block, its features' part (sum_f a_f d_f), its dense part (b_dec + x W_skip) and
    its error (FFN(x) - T(x)), each carried along the stream to the generator; and the logit itself."""

    output_tokens: tuple
    blocks: tuple  # "dec.0", ...
    features: np.ndarray  # (T, blocks)
    dense: np.ndarray
    error: np.ndarray
    logit: np.ndarray  # (T,)
    top: tuple  # per step and block: ((feature index, its part of the logit), ...) the largest |part| first, 3 at most


@torch.no_grad()
def block_logits(translator, dicts: dict, forced) -> BlockLogits:
    """BlockLogits of one forced pass (Translator.force): every decoder block's output split by its transcoder."""
    from .contributions import direct_logits

    capture = translator.capture(forced)
    model = translator.model
    split, top_idx = {}, {}
    for l, cap in enumerate(capture["decoder"]):
        tc = dicts[f"dec.{l}"]
        x, out = cap["ffn"]["input"][0].float(), cap["ffn"]["out"][0].float()
        y_hat, a = tc(x)
        n = min(tc.k or tc.width, tc.width)
        values, idx = a.topk(n, dim=-1)  # (T, n): every active feature (TopK), zeros after them
        per_feature = values[..., None] * tc.W_dec[idx]  # (T, n, D)
        split[l] = {"features": per_feature, "dense": y_hat - per_feature.sum(1), "error": out - y_hat}
        top_idx[l] = (idx, values)
    d = direct_logits(capture, model, forced.output_ids, split=split)
    col = {name: i for i, name in enumerate(d["parts"])}
    L = len(split)
    get = lambda piece: np.stack([d["logits"][:, col[f"L{l + 1} ffn {piece}"]] for l in range(L)], 1)  # noqa: E731
    tops = []
    for t in range(len(forced.output_ids)):
        row = []
        for l in range(L):
            idx, values = top_idx[l]
            share = d["pieces"][f"L{l + 1} ffn features"][t]
            found = [(int(f), float(v)) for f, v, a in zip(idx[t].tolist(), share, values[t].tolist()) if a > 0]
            row.append(tuple(sorted(found, key=lambda s: -abs(s[1]))[:3]))
        tops.append(tuple(row))
    return BlockLogits(tuple(forced.output_tokens), tuple(f"dec.{l}" for l in range(L)), get("features"),
                       get("dense"), get("error"), d["total"], tuple(tops))
