"""Cause, not correlation: activation patching between two sentences that differ in one word.

Two sentences of the same length in tokens, a clean one ("Ein Mann ...") and a corrupted one ("Eine Frau ..."),
are translated; at the first step t where the translations differ, with the clean translation's prefix y_<t in both
runs, the logit difference LD = logit(clean word) - logit(corrupted word) at step t is the metric. A site's value in
one run is replaced by its value in the other (Vig et al., NeurIPS 2020; Meng et al., NeurIPS 2022), and

    effect = (LD_patched - LD_corrupt) / (LD_clean - LD_corrupt)

(Zhang and Nanda, ICLR 2024, section 3: the normalised logit difference; Heimersheim and Nanda, 2024). Two
directions, the same formula:

- denoising: the corrupted run with one site taken from the clean run. 1: this site alone brings the clean word
  back; 0: it does nothing alone. It finds what is sufficient to carry the difference.
- noising: the clean run with one site taken from the corrupted run. 0: this site alone destroys the clean word;
  1: it does nothing. It finds what is necessary.

Sites (model/extras.py names them; the stacks count layers from 0, the page from 1):
- the encoder's residual stream at each source position, after the embedding (layer 0) and after each layer;
- the decoder's residual stream at each position 0..t (the prefix and the step itself), the same way;
- each head's output (before W_O), all its positions at once: encoder, decoder and cross-attention heads;
- single cross-attention edges (a head, a query position, a source position): the term alpha_ij v_j of the head's
  output, replaced by the other run's.

Every residual and head site is a row of shared batches (`ROWS` to a pass). Edges are many (heads x positions x
source tokens): attribution patching (Nanda, 2023; Kramar et al., 2024) estimates all of them from one backward pass
of the corrupted run, effect_ij ~ dLD/do_i . (alpha'_ij v'_j - alpha_ij v_j) / (LD_clean - LD_corrupt) with o_i the
head's output at query i, and the strongest are confirmed by exact patching.
"""

import math
import time
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import files
from .errors import InputError
from .extras import Extras
from .i18n import _
from .result import plain

ROWS = 96  # patched runs per forward pass
EDGES = 12  # strongest edges (by attribution patching) confirmed by exact patching
DIRECTIONS = ("denoising", "noising")
STACKS = ("encoder", "decoder")
METRIC = "(LD_patched - LD_corrupt) / (LD_clean - LD_corrupt)"
HEAD_SITES = (("encoder", "self", "enc"), ("decoder", "self", "dec"), ("decoder", "cross", "cross"))


@dataclass(frozen=True)
class Site:
    """One row of exact patching: the residual stream at one position after one layer (`layer` -1: the embedding),
    or one head's output (`sub`: "self" or "cross"; `index`: the head)."""

    kind: str  # "resid" | "head"
    stack: str  # "encoder" | "decoder"
    layer: int
    index: int  # the position (resid) or the head (head): the row of the captured value it replaces
    sub: str | None = None  # a head's attention: "self" | "cross"

    @classmethod
    def resid(cls, stack: str, layer: int, position: int) -> "Site":
        return cls("resid", stack, layer, position)

    @classmethod
    def head(cls, stack: str, layer: int, sub: str, head: int) -> "Site":
        return cls("head", stack, layer, head, sub)

    @property
    def key(self) -> tuple:
        """The model/extras.py site it edits."""
        if self.kind == "resid":
            return (self.stack, "embed") if self.layer < 0 else (self.stack, self.layer, "output")
        return self.stack, self.layer, self.sub, "heads"


@dataclass
class Setup:
    """Both runs of a pair at its first differing step: ids, the step, the two words and every activation."""

    src: dict  # {"clean" | "corrupt": (1, S) ids}
    tgt: torch.Tensor  # (1, t + 1): <sos> and the clean translation's first t tokens
    step: int  # t, the first step where the two translations differ
    words: tuple  # (clean word id, corrupt word id)
    src_tokens: dict  # {"clean" | "corrupt": S labels}
    tgt_tokens: list  # t + 1 labels of the decoder inputs
    word_tokens: tuple  # (clean word, corrupt word)
    outputs: dict  # {"clean" | "corrupt": the greedy translation's tokens}
    acts: dict  # {"clean" | "corrupt": {site: (1, ...) tensor}}
    ld: dict  # {"clean" | "corrupt": LD of the unpatched run}


def activations(capture: dict) -> dict:
    """A capture's values at every patchable site (model/extras.py names), batch kept."""
    acts = {}
    for stack, embed in (("encoder", "src_embed"), ("decoder", "tgt_embed")):
        acts[stack, "embed"] = capture[embed]["tokens"] + capture[embed]["positions"]  # the first layer's input
        for layer, c in enumerate(capture[stack]):
            acts[stack, layer, "output"] = c["output"]
            for sub in ("self", "cross"):
                if sub in c:
                    acts[stack, layer, sub, "heads"] = c[sub]["heads"]
                    acts[stack, layer, sub, "weights"] = c[sub]["weights"]
                    acts[stack, layer, sub, "v"] = c[sub]["v"]
    return acts


def logit_difference(logits: torch.Tensor, step: int, words: tuple) -> torch.Tensor:
    """(B,) logit(clean word) - logit(corrupt word) at the step."""
    at = logits[:, step].double()
    return at[:, words[0]] - at[:, words[1]]


def setup(translator, clean: str, corrupt: str) -> Setup:
    """Translate both sentences, find the first step where they differ and capture both runs there."""
    c_tokens, c_ids, c_cut = translator.source_ids(clean)
    x_tokens, x_ids, x_cut = translator.source_ids(corrupt)
    specials = 1 + translator.cfg.source_start  # <sos> and <eos>, or a Marian model's </s> alone
    if len(c_ids) != len(x_ids):
        raise InputError(f"the two sentences must have the same number of tokens to patch position by position: "
                         f"{len(c_ids) - specials} and {len(x_ids) - specials}")
    if c_tokens == x_tokens and (c_cut or x_cut):  # the tokens kept (less <sos> and <eos>): as many as the cut keeps
        raise InputError(f"the two sentences differ only past the model's {len(c_ids) - specials}-token cut, so the "
                         "model sees the same input: change a word before it")
    if c_ids == x_ids:
        raise InputError("the two sentences are the same to the model: change a word")
    outs = [[s.token for s in r.steps] for r in translator.translate_batch([clean, corrupt], with_maps=False)]
    t = next((i for i, (a, b) in enumerate(zip(*outs)) if a != b), None)
    if t is None:
        raise InputError("the two translations are the same word for word: there is no step where they differ "
                         "to trace back")
    stoi = translator.tgt_vocab.stoi
    forced = translator.force(clean, outs[0][:t + 1])  # the clean run, forced up to the step where the two part
    clean_ids, tgt = translator.inputs(forced)[:2]
    return capture_pair(translator.model, clean_ids, torch.tensor([x_ids], device=translator.device), tgt,
                        t, (stoi[outs[0][t]], stoi[outs[1][t]]), {"clean": c_tokens, "corrupt": x_tokens},
                        forced.tgt_tokens, (outs[0][t], outs[1][t]), {"clean": outs[0], "corrupt": outs[1]})


def capture_pair(model, clean, corrupt, tgt, step: int, words: tuple, src_tokens=None, tgt_tokens=None,
                 word_tokens=None, outputs=None) -> Setup:
    """Both runs of a pair captured: clean and corrupt (1, S) source ids, tgt (1, t + 1) the shared decoder inputs,
    the step and the two word ids whose logit difference is measured."""
    src = {"clean": clean, "corrupt": corrupt}
    acts, ld = {}, {}
    with torch.no_grad():
        for run in ("clean", "corrupt"):
            capture = {}
            logits = model(src[run], tgt, Extras(capture=capture, need_weights=False)).logits
            acts[run], ld[run] = activations(capture), float(logit_difference(logits, step, words)[0])
    if math.isclose(ld["clean"], ld["corrupt"], abs_tol=1e-9):
        raise InputError("the two runs give the same logit difference: nothing to normalise by")
    return Setup(src, tgt, step, words, src_tokens, tgt_tokens, word_tokens, outputs, acts, ld)


# --- the sites and their edits -----------------------------------------------------------------------------------
def sites(s: Setup, n_enc: int, n_dec: int, n_heads: int) -> list[Site]:
    """Every residual and head site, one row each: each stack's residual at every position after the embedding and
    after each layer, then every head of every attention."""
    S, T = s.src["clean"].size(1), s.tgt.size(1)
    found = []
    for stack, L, P in (("encoder", n_enc, S), ("decoder", n_dec, T)):
        found += [Site.resid(stack, layer, p) for layer in range(-1, L) for p in range(P)]
    for stack, sub, _kind in HEAD_SITES:
        found += [Site.head(stack, layer, sub, h) for layer in range(n_enc if stack == "encoder" else n_dec)
                  for h in range(n_heads)]
    return found


def edits(rows: list[Site], source: dict, device) -> dict:
    """The Extras.patch of a batch: each row replaces its one site by the source run's value (source: the run the
    values come from). Rows of other sites pass through unchanged."""
    B = len(rows)
    by_key = {}
    for b, site in enumerate(rows):
        by_key.setdefault(site.key, []).append((b, site))
    patch = {}
    for k, members in by_key.items():
        value = source[k]  # (1, P, D) residual, one row a position; (1, H, Tq, hs) heads, one row a head
        where = torch.zeros(B, value.size(1), dtype=torch.bool, device=device)
        for b, site in members:
            where[b, site.index] = True  # the site's position, or its head
        where = where.view(B, value.size(1), *[1] * (value.dim() - 2))  # broadcast over the value's other axes
        patch[k] = (lambda v, where=where, value=value: torch.where(where, value, v))
    return patch


def edge_edits(edges: list[tuple], source: dict, device) -> dict:
    """The Extras.patch of a batch of cross-attention edges (layer, head, query, key), one row each: the term
    alpha_ij v_j of that head's output at that query, replaced by the source run's."""
    B = len(edges)
    by_layer = {}
    for b, e in enumerate(edges):
        by_layer.setdefault(e[0], []).append((b, e))
    patch = {}
    for layer, members in by_layer.items():
        a_src, v_src = source["decoder", layer, "cross", "weights"], source["decoder", layer, "cross", "v"]
        H, Tq, Tk = a_src.shape[1:]
        where = torch.zeros(B, H, Tq, Tk, dtype=torch.float32, device=device)
        for b, (_site, h, i, j) in members:
            where[b, h, i, j] = 1.0

        def edit(out, weights, v, where=where, a_src=a_src, v_src=v_src):
            # sum_j where_ij (alpha'_ij v'_j - alpha_ij v_j): (B, H, Tq, hs)
            return out + (where * a_src) @ v_src - (where * weights) @ v
        patch["decoder", layer, "cross", "edges"] = edit
    return patch


@torch.no_grad()
def run_rows(model, s: Setup, base: str, patches: list[dict], sizes: list[int]) -> np.ndarray:
    """LD of each patched row: the `base` run ("clean" or "corrupt") repeated, each batch with its patch.

    Each batch also holds the base run unpatched, as its row 0 (no edit touches it): a row is reported as its change
    from that row, added to the base run's own LD, so that a patch which changes nothing gives the base LD exactly
    (the rows of a batch are computed alike; a batch of another size may round its sums differently)."""
    out = []
    for patch, B in zip(patches, sizes):
        shifted = {site: (lambda *a, edit=edit: shift(edit, *a)) for site, edit in patch.items()}
        logits = model(s.src[base].expand(B + 1, -1), s.tgt.expand(B + 1, -1),
                       Extras(need_weights=False, patch=shifted)).logits
        ld = logit_difference(logits, s.step, s.words).cpu().numpy()
        out.append(ld[1:] - ld[0] + s.ld[base])
    return np.concatenate(out) if out else np.zeros(0)


def shift(edit, value, *more):
    """An edit made for B rows, applied to rows 1..B of a batch whose row 0 stays as it is."""
    if more:  # edges: edit(out, weights, v)
        rest = edit(value[1:], *(m[1:] for m in more))
    else:
        rest = edit(value[1:])
    return torch.cat([value[:1], rest])


def effect(ld: np.ndarray, s: Setup) -> np.ndarray:
    return (ld - s.ld["corrupt"]) / (s.ld["clean"] - s.ld["corrupt"])


def patch_sites(translator, s: Setup, direction: str) -> dict:
    """Every residual and head site patched exactly in one direction: {site: effect}."""
    cfg = translator.cfg
    base, source = ("corrupt", "clean") if direction == "denoising" else ("clean", "corrupt")
    rows = sites(s, cfg.n_enc_layers, cfg.n_dec_layers, cfg.n_heads)
    chunks = [rows[i:i + ROWS] for i in range(0, len(rows), ROWS)]
    ld = run_rows(translator.model, s, base, [edits(c, s.acts[source], translator.device) for c in chunks],
                  [len(c) for c in chunks])
    return dict(zip(rows, effect(ld, s)))


def attribution_patching(translator, s: Setup) -> np.ndarray:
    """Every cross-attention edge's denoising effect estimated to first order from one backward pass of the
    corrupted run: (L, H, t + 1, S)."""
    model = translator.model
    capture = {}
    with torch.enable_grad():
        logits = model(s.src["corrupt"], s.tgt, Extras(capture=capture, need_weights=False)).logits
        heads = [c["cross"]["heads"] for c in capture["decoder"]]  # L x (1, H, Tq, hs), o_i of each head
        grads = torch.autograd.grad(logit_difference(logits, s.step, s.words).sum(), heads)
    found = []
    for layer, g in enumerate(grads):
        a_c, v_c = s.acts["clean"]["decoder", layer, "cross", "weights"], s.acts["clean"]["decoder", layer, "cross", "v"]
        a_x, v_x = s.acts["corrupt"]["decoder", layer, "cross", "weights"], s.acts["corrupt"]["decoder", layer, "cross", "v"]
        # g_i . (alpha'_ij v'_j - alpha_ij v_j) = alpha'_ij (g_i . v'_j) - alpha_ij (g_i . v_j)
        d = a_c * (g @ v_c.transpose(-2, -1)) - a_x * (g @ v_x.transpose(-2, -1))  # (1, H, Tq, S)
        found.append(d[0].double())
    return (torch.stack(found) / (s.ld["clean"] - s.ld["corrupt"])).cpu().numpy()


def exact_edges(translator, s: Setup, edges: list[tuple]) -> np.ndarray:
    """The denoising effect of each edge (layer, head, query, key), patched exactly, one row each."""
    if not edges:
        return np.zeros(0)
    chunks = [edges[i:i + ROWS] for i in range(0, len(edges), ROWS)]
    ld = run_rows(translator.model, s, "corrupt", [edge_edits(c, s.acts["clean"], translator.device) for c in chunks],
                  [len(c) for c in chunks])
    return effect(ld, s)


# --- one pair -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Edge:
    """One cross-attention edge (layer, head, query step, key position; from 0): its effect estimated by attribution
    patching and measured by exact patching, denoising."""

    layer: int
    head: int
    query: int
    key: int
    estimate: float
    exact: float


@dataclass(frozen=True)
class Patching:
    """Every site's effect for one pair, both directions, and the cross-attention edges."""

    clean: str
    corrupt: str
    src_tokens: dict
    tgt_tokens: list
    outputs: dict
    step: int
    words: tuple
    ld: dict
    swapped: list  # source positions whose tokens differ
    encoder: dict  # direction -> (L_enc + 1, S): row 0 the embedding
    decoder: dict  # direction -> (L_dec + 1, t + 1)
    heads: dict  # direction -> {"enc" | "dec" | "cross": (L, H)}
    edges_estimated: np.ndarray  # (L_dec, H, t + 1, S) attribution patching, denoising
    edges: tuple  # Edges, the strongest by estimate first

    def summary(self) -> str:
        """Where the difference travels, in one computed sentence (denoising effects)."""
        enc, dec = self.encoder["denoising"], self.decoder["denoising"]
        j = max(self.swapped, key=lambda p: enc[-1, p])
        cross = self.heads["denoising"]["cross"]
        layer, head = np.unravel_index(int(np.argmax(cross)), cross.shape)
        word = self.src_tokens["clean"][j]
        carried = ", ".join(_("{share:.2f} after layer {layer}").format(share=dec[layer_, self.step], layer=layer_)
                            for layer_ in range(1, len(dec) - 1))
        said = _("“{word}” instead of “{other}” becomes “{written}” instead of “{instead}” at step {step}: the difference "
                 "travels through source position {j} (“{word}”) up the encoder (its last layer there alone restores "
                 "{share:.2f} of it), into the decoder mostly by cross-attention layer {layer} head {head} (effect "
                 "{effect:.2f})").format(word=word, other=self.src_tokens["corrupt"][j], written=self.words[0],
                                         instead=self.words[1], step=self.step + 1, j=j, share=enc[-1, j],
                                         layer=layer + 1, head=head + 1, effect=cross[layer, head])
        return said + (_("; the decoder's stream at the step carries {carried}.").format(carried=carried) if carried
                       else ".")

    def to_json(self, digits: int = 4) -> dict:
        """The `python -m model.patch --clean ... --corrupt ...` object (no edges_estimated: the edges carry it)."""
        return {"clean": self.clean, "corrupt": self.corrupt, "src_tokens": self.src_tokens,
                "tgt_tokens": self.tgt_tokens, "outputs": self.outputs, "step": self.step,
                "words": plain(self.words), "ld": plain(self.ld, 6), "swapped": self.swapped, "metric": METRIC,
                **plain({"encoder": self.encoder, "decoder": self.decoder, "heads": self.heads, "edges": self.edges},
                        digits),
                "summary": self.summary()}


def patch(translator, clean: str, corrupt: str, edges: int = EDGES) -> Patching:
    """Every residual and head site of a pair patched exactly in both directions; every cross-attention edge by
    attribution patching, the `edges` strongest confirmed exactly."""
    s = setup(translator, clean, corrupt)
    cfg = translator.cfg
    S, T = s.src["clean"].size(1), s.tgt.size(1)
    encoder, decoder, heads = {}, {}, {}
    for direction in DIRECTIONS:
        found = patch_sites(translator, s, direction)
        encoder[direction] = np.array([[found[Site.resid("encoder", layer, p)] for p in range(S)]
                                       for layer in range(-1, cfg.n_enc_layers)])
        decoder[direction] = np.array([[found[Site.resid("decoder", layer, p)] for p in range(T)]
                                       for layer in range(-1, cfg.n_dec_layers)])
        heads[direction] = {kind: np.array([[found[Site.head(stack, layer, sub, h)] for h in range(cfg.n_heads)]
                                            for layer in range(cfg.n_enc_layers if stack == "encoder"
                                                               else cfg.n_dec_layers)])
                            for stack, sub, kind in HEAD_SITES}
    if not edges:  # the contrast-set table: no edges, no backward pass
        estimated = np.zeros((cfg.n_dec_layers, cfg.n_heads, T, S))
    else:
        estimated = attribution_patching(translator, s)
    top = np.argsort(-np.abs(estimated), axis=None, kind="stable")[:edges]
    picked = [tuple(int(i) for i in np.unravel_index(f, estimated.shape)) for f in top]
    exact = exact_edges(translator, s, picked)
    swapped = [p for p in range(S) if int(s.src["clean"][0, p]) != int(s.src["corrupt"][0, p])]
    return Patching(clean, corrupt, s.src_tokens, s.tgt_tokens, s.outputs, s.step, s.word_tokens, s.ld, swapped,
                    encoder, decoder, heads, estimated,
                    tuple(Edge(*e, float(estimated[e]), float(x)) for e, x in zip(picked, exact)))


# --- over the contrast set ----------------------------------------------------------------------------------------
def site_values(p: Patching) -> dict:
    """The per-pair values the contrast-set table averages: each head's effect, the encoder's residual at the swapped
    positions (their largest) and elsewhere (their mean) after each layer, the decoder's at the step."""
    S = p.encoder["denoising"].shape[1]
    other = [q for q in range(1, S - 1) if q not in p.swapped]
    out = {}
    for d in DIRECTIONS:
        enc = p.encoder[d]
        pick = np.argmax(np.abs(enc[:, p.swapped]), axis=1)  # the swapped position that carries most, per layer
        out[d] = {"heads": p.heads[d],
                  "encoder_swapped": enc[:, p.swapped][np.arange(len(enc)), pick],
                  "encoder_other": enc[:, other].mean(1) if other else np.zeros(len(enc)),
                  "decoder_step": p.decoder[d][:, p.step]}
    return out


@dataclass(frozen=True)
class Band:
    """A mean over pairs and its 95% bootstrap interval, element by element."""

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


@dataclass(frozen=True)
class Effects:
    """One direction's mean effects over a category's pairs (site_values' sites)."""

    heads: dict  # "enc" | "dec" | "cross" -> Band of (L, H)
    encoder_swapped: Band  # (L_enc + 1,)
    encoder_other: Band
    decoder_step: Band  # (L_dec + 1,)


@dataclass(frozen=True)
class Category:
    n: int  # pairs measured
    denoising: Effects
    noising: Effects
    summary: str  # where the difference travels, in one computed sentence


@dataclass(frozen=True)
class ContrastTable:
    """The contrast-set table (`python -m model.patch --pairs`, shipped as CHECKPOINT/patching.json)."""

    metric: str
    directions: tuple
    categories: dict  # category -> Category
    skipped: list  # [{"pair": index, "why": the reason}]: pairs whose translations do not differ for this model
    checkpoint: dict | None = None
    data: dict | None = None

    def to_json(self, digits: int = 4) -> dict:
        return plain(self, digits)


def contrast_table(translator, pairs: list[dict], progress: bool = False) -> ContrastTable:
    """Every site's mean effect per category with 95% bootstrap intervals over the pairs (model.metrics)."""
    from tqdm import tqdm

    from .metrics import mean_interval

    found, skipped = {}, []
    for i, pair in enumerate(tqdm(pairs, disable=not progress, desc="patching", unit="pair")):
        try:  # measured before its category is made: a category whose every pair is skipped has no row at all
            values = site_values(patch(translator, pair["clean"], pair["corrupt"], edges=0))
            found.setdefault(pair["category"], []).append(values)
        except InputError as e:  # the pair does not pass for this model (its translations do not differ)
            skipped.append({"pair": i, "why": str(e)})

    def band(rows: list) -> Band:
        return Band(*mean_interval(np.array(rows)))

    categories = {}
    for category, values in found.items():
        effects = {d: Effects({kind: band([v[d]["heads"][kind] for v in values]) for _stack, _sub, kind in HEAD_SITES},
                              *(band([v[d][k] for v in values])
                                for k in ("encoder_swapped", "encoder_other", "decoder_step")))
                   for d in DIRECTIONS}
        cross = np.round(effects["denoising"].heads["cross"].mean, 4)
        layer, head = np.unravel_index(int(np.argmax(cross)), cross.shape)
        categories[category] = Category(len(values), **effects, summary=(
            f"{category}: mostly cross-attention layer {layer + 1} head {head + 1} "
            f"(mean effect {cross[layer, head]:.2f} over {len(values)} pairs)"))
    return ContrastTable(METRIC, DIRECTIONS, categories, skipped)


USAGE = """usage examples:
    python -m model.patch --clean "Ein Mann spielt Gitarre." --corrupt "Eine Frau spielt Gitarre."
    python -m model.patch --pairs assets/contrast/pairs.jsonl --out checkpoints/patching.json"""


def main(argv=None):
    """`python -m model.patch`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli

    p = cli.Parser(description=__doc__.split("\n\n")[0] + "\n\n" + USAGE)
    p.add_argument("--clean", help="the clean sentence (with --corrupt: one pair, one JSON object)")
    p.add_argument("--corrupt", help="the corrupted sentence: the same number of tokens, a word changed")
    p.add_argument("--pairs", help="a pairs file (JSON lines, model/contrast.py): the contrast-set table")
    p.add_argument("--out", help="with --pairs: the JSON file to write (the shipped one: CHECKPOINT/patching.json)")
    p.add_argument("--edges", type=cli.whole, default=EDGES, help=f"edges confirmed exactly (default: {EDGES})")
    cli.add_checkpoint(p)
    cli.add_device(p)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    cli.check(args, edges=cli.Range(0, 1000))
    if args.pairs is None:
        if args.clean is None or args.corrupt is None:
            raise InputError("give --clean and --corrupt (one pair), or --pairs FILE --out FILE (the table)")
        translator = cli.load_translator(args)
        print(files.dumps(patch(translator, args.clean, args.corrupt, args.edges).to_json(), ensure_ascii=False))
        return 0
    if args.out is None:
        raise InputError("--pairs needs --out FILE")
    from .contrast import read_pairs

    pairs = read_pairs(args.pairs)
    out = cli.output_file(args.out, args.checkpoint, "patching.json")
    translator = cli.load_translator(args)
    t0 = time.time()
    result = contrast_table(translator, pairs, progress=not args.no_progress)
    result = dataclasses.replace(result, checkpoint=translator.checkpoint_id, data={"pairs": Path(args.pairs).name, "n": len(pairs), "seconds": round(time.time() - t0, 1),
                      "threads": torch.get_num_threads(),
                      "command": " ".join(["python -m model.patch --pairs", Path(args.pairs).name,
                                           *(["--checkpoint", args.checkpoint] if args.checkpoint else []),
                                           "--out", Path(args.out).name])})
    files.write_text(out, files.dumps(result.to_json(), ensure_ascii=False, indent=1) + "\n")
    print(files.dumps({"out": str(out), "pairs": len(pairs), "skipped": len(result.skipped),
                       "seconds": result.data["seconds"]}))
    return 0


if __name__ == "__main__":
    from . import cli

    cli.run(main)
