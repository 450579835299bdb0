"""The public entry point: sentences in, plain results out (model/result.py).

    tr = Translator.load()                                  # shipped checkpoint, best device
    r = tr.translate("Ein Hund läuft.")                     # Translation: tokens, maps, step trace
    r = tr.translate("Ein Hund läuft.", heads_off="cross.2") # with heads switched off (model/heads.py)
    r = tr.translate("Ein Hund läuft.", force={1: "cat"})   # what-if: step 1 says "cat", greedy after
    b = tr.beam("Ein Hund läuft.", beam=4)                  # BeamSearch: b.best, b.nbest, b.trace
    s = tr.score_reference("Ein Hund läuft.", "A dog runs.") # ReferenceScore: s.translation, s.loss, s.ppl
    i = tr.inside("Ein Hund läuft.")                        # Inside: every intermediate of the attention
    h = i.head("cross", 2, 5, 1)                            # HeadTrace: one query through one head, real numbers
    lens = tr.logit_lens("Ein Hund läuft.")                 # LogitLens: the next-token guess after each layer
    n = tr.weighted_norms("Ein Hund läuft.")                # AttentionNorms: ||alpha f(x)|| per head (Kobayashi)
    c = tr.contributions("Ein Hund läuft.")                 # Contributions: ALTI+ source and prefix shares
    d = tr.decoder_lens("Ein Hund läuft.")                  # DecoderLens: greedy output from each encoder layer
    f = tr.force("Ein Hund läuft.")                         # Forced: the sentence forced through its output
    cap = tr.capture(f)                                     # every intermediate of that one pass, for analyses

Interventions are call arguments: the shared model is never edited, so any number of
users can ask for different ones at the same time.
"""

from pathlib import Path

import numpy as np
import torch

from .checkpoint import checkpoint_folder, load_checkpoint, origin, weights_sha256
from .data import pad
from .decoding import beam_search, greedy_decode, greedy_ids, step_stats
from .device import describe, pick_device
from .errors import InputError
from .extras import Extras
from .heads import parse_head_mask
from .result import (AttentionNorms, BeamSearch, Candidate, Contributions, DecoderLens, Forced, Inside, LogitLens,
                     ReferenceScore, Step, Translation)

MAX_OUTPUT = 50  # generated tokens at most (docs/contract.md, Metrics: greedy, max 50 tokens)
ROOT = Path(__file__).resolve().parents[1]  # the project folder
IN_MEMORY = "(in memory)"  # checkpoint name of a Translator built from a model, not loaded from a folder
# Inside.sublayers[kind] names, read from the capture of one forward pass (Transformer.forward)
SUBLAYER_VALUES = ("x", "kv", "q", "k", "v", "scores", "scaled", "mask", "weights", "heads", "attn_out", "residual",
                   "normed")


class Translator:
    def __init__(self, model, src_vocab, tgt_vocab, checkpoint: tuple = (IN_MEMORY, None, None),
                 origin: dict | None = None):
        self.model = model.eval()
        # checkpoint.origin's: the family, the (source, target) language codes, a Marian model's generation settings
        self.origin = origin or {"family": "ours", "languages": ("de", "en"), "generation": {}}
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.cfg = model.cfg
        self.device = next(model.parameters()).device
        self._checkpoint = checkpoint  # (folder name, resolved path, sha256 of model.safetensors)

    @classmethod
    def load(cls, checkpoint=None, device=None) -> "Translator":
        """Load a checkpoint (default: the shipped one) on `device` (default: best available)."""
        model, sv, tv = load_checkpoint(checkpoint, pick_device(device))
        folder = checkpoint_folder(checkpoint).resolve()
        # Exports are shared: a path inside the project is written relative to it ("checkpoints"), any
        # other as its folder name only, never a user's home directory.
        shown = folder.relative_to(ROOT).as_posix() if folder.is_relative_to(ROOT) else folder.name
        return cls(model, sv, tv, checkpoint=(folder.name, shown, weights_sha256(folder)), origin=origin(folder))

    @property
    def checkpoint_id(self) -> dict:
        """What the weights came from, for exports: {"name", "path", "sha256"} (a fresh dict each call).

        name: the checkpoint folder's name, or "(in memory)" for a Translator built from a model;
        path: the folder relative to the project, or its name when outside it (None in memory); sha256: hex digest of model.safetensors,
        computed once at load (None in memory).
        """
        name, path, sha256 = self._checkpoint
        return {"name": name, "path": path, "sha256": sha256}

    @property
    def device_name(self) -> str:
        return describe(self.device)

    def position_tables(self) -> dict:
        """The position encodings the model adds, as numpy (P, D) tables: source and target."""
        return {side: emb.position_table().detach().float().cpu().numpy()
                for side, emb in (("source", self.model.src_embed), ("target", self.model.tgt_embed))}

    # inputs ------------------------------------------------------------------------------------
    def source_ids(self, sentence: str) -> tuple[list[str], list[int], int]:
        """Tokens (with <sos>/<eos>; a Marian model's: pieces and </s>), their ids, and how many tokens were cut to
        fit the positions."""
        if not isinstance(sentence, str):
            raise InputError(f"expected a sentence as text, got {type(sentence).__name__}")
        tokens = self.src_vocab.tokenize(sentence, "de")
        if not any(t.strip() for t in tokens):
            raise InputError("the sentence is empty: type a German sentence")
        start = self.cfg.source_start
        keep = self.cfg.max_positions - 1 - start
        cut = max(0, len(tokens) - keep)
        tokens = tokens[:keep]
        v = self.src_vocab
        return [v.sos] * start + [*tokens, v.eos], [v.sos_id] * start + [*v.encode(tokens), v.eos_id], cut

    def check_top_k(self, top_k):
        """InputError unless top_k, the alternatives kept per step, is a whole number from 1 to the vocabulary size."""
        V = self.cfg.tgt_vocab_size
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= V:
            raise InputError(f"top_k must be a whole number from 1 to {V} (the English vocabulary), got {top_k!r}")

    def head_mask(self, heads_off: str | None):
        """A head-mask SPEC (model/heads.py) as tensors on the model's device, or None."""
        mask = parse_head_mask(heads_off, self.cfg)
        return None if mask is None else {k: v.to(self.device) for k, v in mask.items()}

    def _batch_mask(self, heads_off: str | list | None, n: int) -> dict | None:
        """One SPEC for all: its (L, H) masks; one SPEC per sentence: (n, L, H) masks, a row of ones where a sentence
        keeps every head; None when no sentence switches a head off."""
        if heads_off is None or isinstance(heads_off, str):
            return self.head_mask(heads_off)
        if len(heads_off) != n:
            raise ValueError(f"{len(heads_off)} head specs for {n} sentences")
        parsed = {spec: self.head_mask(spec) for spec in set(heads_off)}  # a class shares a few SPECs
        if all(m is None for m in parsed.values()):
            return None
        every = next(m for m in parsed.values() if m is not None)  # each mask has every kind (model/heads.py)
        masks = [parsed[spec] for spec in heads_off]
        return {k: torch.stack([torch.ones_like(every[k]) if m is None else m[k] for m in masks]) for k in every}

    def _force_ids(self, force: dict | None, max_len: int) -> dict | None:
        """{step: English token} -> {step: id}, with a clear error for an unknown token or step."""
        if not force:
            return None
        ids = {}
        for step, token in force.items():
            if not isinstance(step, int) or not 0 <= step < max_len:
                raise InputError(f"forced step {step} is outside the output (steps 0 to {max_len - 1})")
            if token not in self.tgt_vocab.stoi:
                raise InputError(f"forced token {token!r} is not in the model's English vocabulary")
            ids[step] = self.tgt_vocab.stoi[token]
        return ids

    # translation --------------------------------------------------------------------------------
    def translate(self, sentence: str, beam: int = 1, top_k: int = 5, max_len: int = MAX_OUTPUT,
                  heads_off: str | None = None, force: dict | None = None) -> Translation:
        """Translate one sentence with every attention map and the step trace (greedy, or beam search)."""
        if force and beam != 1:
            raise InputError(f"forcing tokens works with greedy decoding (beam 1), not with beam {beam}")
        if beam == 1:
            return self.translate_batch([sentence], top_k=top_k, max_len=max_len, heads_off=heads_off,
                                        force=force)[0]
        return self.beam(sentence, beam, top_k, max_len, heads_off).best

    def beam_rule(self) -> dict:
        """How beam search ranks and stops for this model: a converted Marian model's own generation settings, with
        Hugging Face's defaults (length_penalty 1.0, early_stopping false) where they are not given; ours: GNMT's
        length normalisation with alpha 0.6."""
        if self.origin["family"] != "marian":
            return {"alpha": 0.6, "early_stopping": False}
        gen = self.origin["generation"]
        return {"alpha": float(gen.get("length_penalty", 1.0)), "early_stopping": gen.get("early_stopping", False)}

    def beam(self, sentence: str, beam: int = 4, top_k: int = 5, max_len: int = MAX_OUTPUT,
             heads_off: str | None = None) -> BeamSearch:
        """Beam search: the best Translation, the n-best Candidates and the trace of every step."""
        if not isinstance(beam, int) or beam < 1:
            raise InputError(f"beam width must be a whole number of at least 1, got {beam}")
        src_tokens, ids, cut = self.source_ids(sentence)
        src = torch.tensor([ids], device=self.device)
        res = beam_search(self.model, src, beam, max_len, head_mask=self.head_mask(heads_off), **self.beam_rule())
        best = self.analyze(sentence, res.hypotheses[0].ids, top_k=top_k, heads_off=heads_off)
        itos = self.tgt_vocab.itos
        nbest = [Candidate([itos[i] for i in h.ids], h.score, h.normalized) for h in res.hypotheses]
        trace = [[{"tokens": [itos[i] for i in c["ids"]], "score": c["score"], "status": c["status"]}
                  for c in step] for step in res.trace]
        return BeamSearch(width=beam, best=best, nbest=nbest, trace=trace)

    def analyze(self, sentence: str, output_ids: list, top_k: int = 5, heads_off: str | None = None) -> Translation:
        """A Translation for a given output (ids, <eos> included if produced) by one teacher-forced pass."""
        self.check_top_k(top_k)
        forced = self._forced(sentence, [self.tgt_vocab.itos[i] for i in output_ids], list(output_ids))
        src, tgt, chosen = self.inputs(forced)
        with torch.no_grad():
            out = self.model(src, tgt, Extras(self.head_mask(heads_off)))
        logp, entropy, top_p, top_i = step_stats(out.logits[0], top_k)  # (T, V), (T,), (T, k), (T, k)
        probs = logp.gather(-1, chosen[:, None]).squeeze(-1).exp()
        maps = [torch.stack(m)[:, 0].float().cpu().numpy() for m in
                (out.encoder_attentions, out.decoder_attentions, out.cross_attentions)]
        return self._result(sentence, list(forced.src_tokens), forced.src_ids, forced.cut, list(output_ids),
                            probs.tolist(), entropy.tolist(), top_i.tolist(), top_p.tolist(), maps)

    def score_reference(self, sentence: str, reference: str, heads_off: str | None = None) -> ReferenceScore:
        """Teacher forcing on an English reference: its Translation (steps hold the reference tokens'
        probabilities) and its mean loss per token."""
        forced = self.force(sentence, reference=reference or "")
        r = self.analyze(sentence, list(forced.output_ids), heads_off=heads_off)
        loss = -float(np.mean(np.log(np.maximum([s.prob for s in r.steps], 1e-30))))
        return ReferenceScore(translation=r, loss=loss)

    def translate_batch(self, sentences: list, batch_size: int = 64, top_k: int = 5, max_len: int = MAX_OUTPUT,
                        with_maps: bool = True, heads_off: str | list | None = None, force: dict | None = None,
                        pause=None, patch: dict | None = None) -> list:
        """Greedy translations of many sentences, batched by length; order kept.

        heads_off: one SPEC for every sentence, or a list of one SPEC per sentence ("" or None: every head), decoded
        in the same batches with a mask per row (docs/contract.md, Head masks).
        pause: called before each decoding step (greedy_decode), for a batch that gives way to others.
        patch: an edit of the forward pass on every step (model/extras.py; transcoders' features, model/transcoders.py).
        Raises InputError for an empty sentence; callers that must go on past one
        (model.translate) check each sentence with `source_ids` first.
        """
        self.check_top_k(top_k)
        prepared = [self.source_ids(s) for s in sentences]
        mask, force_ids = self._batch_mask(heads_off, len(sentences)), self._force_ids(force, max_len)
        order = sorted(range(len(sentences)), key=lambda i: len(prepared[i][1]))
        results = [None] * len(sentences)
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            src = pad([prepared[i][1] for i in chunk], self.cfg.pad_id).to(self.device)
            rows = mask if mask is None or isinstance(heads_off, str) else {k: m[chunk] for k, m in mask.items()}
            dec = greedy_decode(self.model, src, max_len, top_k, rows, with_maps, force_ids, pause, patch)
            cpu = {k: (v.float() if v.is_floating_point() else v).cpu() for k, v in vars(dec).items()
                   if v is not None}
            for b, i in enumerate(chunk):
                tokens, ids, cut = prepared[i]
                n, S = int(cpu["lengths"][b]), len(ids)
                if force_ids and max(force_ids) >= n:
                    raise InputError(f"forced step {max(force_ids)} is beyond the output, which ends after step "
                                     f"{n - 1}")
                maps = None
                if with_maps:
                    maps = [cpu["encoder_attentions"][:, b, :, :S, :S].numpy(),
                            cpu["decoder_attentions"][:, b, :, :n, :n].numpy(),
                            cpu["cross_attentions"][:, b, :, :n, :S].numpy()]
                results[i] = self._result(sentences[i], tokens, ids, cut, cpu["ids"][b, :n].tolist(),
                                          cpu["probs"][b, :n].tolist(), cpu["entropy"][b, :n].tolist(),
                                          cpu["top_ids"][b, :n].tolist(), cpu["top_probs"][b, :n].tolist(), maps)
        return results

    # inside the model ---------------------------------------------------------------------------
    def inside(self, sentence: str, output_tokens: list | None = None) -> Inside:
        """Every intermediate of the attention sublayers, from one teacher-forced pass over an output.

        output_tokens: the steps' tokens, <eos> included when produced (default: the greedy
        translation). The weights are the maps a Translation of that output shows.
        """
        forced = self.force(sentence, output_tokens)
        src_tokens, out_tokens, capture = list(forced.src_tokens), list(forced.output_tokens), self.capture(forced)
        enc, dec = capture["encoder"], capture["decoder"]
        layers = {"enc": [(c["self"], c["output"]) for c in enc], "dec": [(c["self"], c["output"]) for c in dec],
                  "cross": [(c["cross"], c["output"]) for c in dec]}
        sublayers = {kind: {name: read_only([self._value(sub, name) for sub, _ in subs])
                            for name in SUBLAYER_VALUES}
                     for kind, subs in layers.items()}
        for kind, subs in layers.items():
            sublayers[kind]["layer_output"] = read_only([out[0] for _, out in subs])  # (L, Tq, D)
        embedding = {side: {"tokens": read_only([capture[f"{side}_embed"]["tokens"][0]])[0],  # (n, D)
                            "positions": read_only([capture[f"{side}_embed"]["positions"]])[0]}  # (n, D)
                     for side in ("src", "tgt")}
        ffn = {stack: {name: read_only([c["ffn"][name][0] for c in capture[stack]]) for name in ("hidden", "residual")}
               for stack in ("encoder", "decoder")}
        return Inside(source=sentence, src_tokens=src_tokens, tgt_tokens=forced.tgt_tokens,
                      output_tokens=out_tokens, sublayers=sublayers, embedding=embedding, ffn=ffn)

    @torch.no_grad()
    def logit_lens(self, sentence: str, output_tokens: list | None = None, top_k: int = 5) -> LogitLens:
        """The generator applied to the state after each decoder layer, for an output (default: greedy's)."""
        self.check_top_k(top_k)
        forced = self.force(sentence, output_tokens)
        out_tokens, capture, (_, _, chosen) = list(forced.output_tokens), self.capture(forced), self.inputs(forced)
        itos = self.tgt_vocab.itos
        tokens, probs, chosen_probs = [], [], []
        for layer in capture["decoder"]:
            # One layer at a time, shaped as in the forward pass, so the last row is the real
            # distribution bit for bit (a stacked (L, T, D) matmul may round differently).
            logp, _, top_p, top_i = step_stats(self.model.logits(layer["output"])[0], top_k)  # (T, V), (T, k)
            tokens.append([[itos[i] for i in row] for row in top_i.tolist()])
            probs.append(top_p.float().cpu().numpy())
            chosen_probs.append(logp.gather(-1, chosen[:, None]).squeeze(-1).exp().float().cpu().numpy())
        return LogitLens(tgt_tokens=forced.tgt_tokens, output_tokens=out_tokens,
                         top_tokens=np.array(tokens, dtype=str), top_probs=np.stack(probs),
                         chosen_prob=np.stack(chosen_probs))

    def weighted_norms(self, sentence: str, output_tokens: list | None = None) -> AttentionNorms:
        """Norm-based attention (Kobayashi et al., 2020) of every head, from one teacher-forced pass over an
        output (default: the greedy translation): {kind: (L, H, Tq, Tk)} shaped like the maps."""
        from .contributions import weighted_norms

        forced = self.force(sentence, output_tokens)
        norms = weighted_norms(self.capture(forced), self.model)
        for a in norms.values():
            a.setflags(write=False)
        return AttentionNorms(src_tokens=list(forced.src_tokens), tgt_tokens=forced.tgt_tokens,
                              output_tokens=list(forced.output_tokens), norms=norms)

    def contributions(self, sentence: str, output_tokens: list | None = None) -> Contributions:
        """ALTI+ (Ferrando et al., 2022): each source and prefix token's contribution to every step of an output
        (default: the greedy translation), from one teacher-forced pass (model/contributions.py)."""
        from .contributions import contributions

        forced = self.force(sentence, output_tokens)
        c = contributions(self.capture(forced), self.model)
        for a in (c["source"], c["prefix"], c["source_share"], c["rollout"], *c["layers"].values()):
            a.setflags(write=False)
        return Contributions(src_tokens=list(forced.src_tokens), tgt_tokens=forced.tgt_tokens,
                             output_tokens=list(forced.output_tokens), source=c["source"], prefix=c["prefix"],
                             source_share=c["source_share"], layers=c["layers"], rollout=c["rollout"])

    def attribute(self, sentence: str, method: str, reference: str | None = None, contrast: str | None = None,
                  output_tokens: list | None = None, progress=None):
        """Gradient or perturbation attributions of every step of the greedy translation (or a reference,
        teacher-forced) to each source and prefix token: an Attribution (model/attribute.py), arrays read-only."""
        from .attribute import attribute

        a = attribute(self, self.force(sentence, output_tokens, reference), method, contrast, progress=progress)
        for v in (a.f, a.source, a.prefix, a.completeness_gap, a.baseline_f):
            if v is not None:
                v.setflags(write=False)
        return a

    @torch.no_grad()
    def decoder_lens(self, sentence: str, max_len: int = MAX_OUTPUT) -> DecoderLens:
        """DecoderLens (Langedijk et al., 2024): greedy decoding with the decoder cross-attending to the output
        of each encoder layer in turn instead of the last one's."""
        src_tokens, ids, _ = self.source_ids(sentence)
        src = torch.tensor([ids], device=self.device)
        capture = {}
        self.model.encode(src, Extras(capture=capture, need_weights=False))
        memories = [self.model.memory(layer["output"]) for layer in capture["encoder"][:-1]]  # (1, S, D) each
        # The last layer as greedy decoding computes it (fused attention): the real translation, bit for bit.
        memories.append(self.model.encode(src, Extras(need_weights=False))[0])
        src_mask = self.model.src_mask(src)
        itos, layers, finished = self.tgt_vocab.itos, [], []
        for memory in memories:  # one at a time, shaped as model.translate decodes one sentence
            out = greedy_ids(self.model, memory, src_mask, max_len)[0]
            ended = bool(out) and out[-1] == self.tgt_vocab.eos_id
            layers.append([itos[i] for i in (out[:-1] if ended else out)])
            finished.append(ended)
        return DecoderLens(source=sentence, src_tokens=src_tokens, layers=layers, finished=finished)

    # one sentence forced through one output ----------------------------------------------------------
    def force(self, sentence: str, output_tokens: list | None = None, reference: str | None = None) -> Forced:
        """The sentence forced through an output: its greedy translation (default), the given tokens (<eos>
        included when the output ends; each must be a word of the English vocabulary) or an English reference
        (tokenized, cut to the positions, <eos> added; a word the model lacks is read as <unk>). Every analysis of
        one output starts from this (model/result.py, Forced)."""
        if reference is not None:
            if output_tokens is not None:
                raise ValueError("force: an output or a reference, not both")
            words = self.tgt_vocab.tokenize(reference, "en")
            if not any(w.strip() for w in words):
                raise InputError("the reference is empty: type an English translation to compare with")
            tokens = [*words[:self.cfg.max_positions - 1], self.tgt_vocab.eos]
            return self._forced(sentence, tokens, self.tgt_vocab.encode(tokens))
        if output_tokens is None:
            output_tokens = [s.token for s in self.translate_batch([sentence], with_maps=False)[0].steps]
        if isinstance(output_tokens, str) or not output_tokens:
            raise InputError("output_tokens must be a non-empty list of English tokens, e.g. ['a', 'dog', '<eos>']")
        if len(output_tokens) > self.cfg.max_positions:
            raise InputError(f"{len(output_tokens)} output tokens: the model has {self.cfg.max_positions} positions")
        stoi = self.tgt_vocab.stoi
        bad = [t for t in output_tokens if t not in stoi or stoi[t] == self.tgt_vocab.pad_id]
        if bad:
            raise InputError(f"output tokens {bad} are not in the model's English vocabulary")
        return self._forced(sentence, list(output_tokens), [stoi[t] for t in output_tokens])

    def _forced(self, sentence: str, tokens: list, ids: list) -> Forced:
        src_tokens, src_ids, cut = self.source_ids(sentence)
        return Forced(source=sentence, src_tokens=tuple(src_tokens), src_ids=tuple(src_ids), cut=cut,
                      output_tokens=tuple(tokens), output_ids=tuple(ids), sos_id=self.tgt_vocab.sos_id,
                      sos=self.tgt_vocab.sos)

    def inputs(self, forced: Forced) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The forced pass's tensors on the model's device: source ids (1, S), decoder inputs (1, T), output (T,)."""
        return (torch.tensor([forced.src_ids], device=self.device),
                torch.tensor([forced.tgt_ids], device=self.device),
                torch.tensor(forced.output_ids, device=self.device))

    @torch.no_grad()
    def capture(self, forced: Forced) -> dict:
        """Every intermediate of the one teacher-forced pass over the forced output (Transformer.forward's capture:
        "src_embed", "tgt_embed", "encoder" and "decoder" per layer; batch dimension 1). The analyses of an output
        (inside, the logit lens, norms, ALTI+, value zeroing, the Faithfulness view) are functions of it."""
        src, tgt, _ = self.inputs(forced)
        capture = {}
        self.model(src, tgt, Extras(capture=capture))
        return capture

    @staticmethod
    def _value(sub: dict, name: str) -> torch.Tensor:
        """One captured value of one sublayer, batch dropped; the mask expanded to (H, Tq, Tk)."""
        if name != "mask":
            return sub[name][0]
        H, Tq, Tk = sub["weights"].shape[1:]
        mask = sub["mask"]
        return torch.ones(H, Tq, Tk, dtype=torch.bool) if mask is None else mask[0].expand(H, Tq, Tk)

    def _result(self, sentence, src_tokens, src_ids, cut, out_ids, probs, entropy, top_ids, top_probs, maps):
        itos = self.tgt_vocab.itos
        out_tokens = [itos[i] for i in out_ids]
        steps = [Step(tok, float(p), float(e), tuple((itos[j], float(q)) for j, q in zip(ti, tp)))
                 for tok, p, e, ti, tp in zip(out_tokens, probs, entropy, top_ids, top_probs)]
        words = out_ids[:-1] if out_ids and out_ids[-1] == self.tgt_vocab.eos_id else out_ids
        empty = np.zeros((0,), dtype=np.float32)
        enc, dec, cross = maps if maps is not None else (empty, empty, empty)
        return Translation(
            source=sentence, src_tokens=src_tokens, tgt_tokens=[self.tgt_vocab.sos, *out_tokens[:-1]],
            output_tokens=[itos[i] for i in words], encoder_attentions=enc, decoder_attentions=dec,
            cross_attentions=cross, steps=steps, pieces=self.tgt_vocab.pieces is not None,
            src_unknown=[i == self.src_vocab.unk_id for i in src_ids], truncated=cut, device=self.device_name)


def capture_maps(capture: dict) -> dict:
    """A capture's attention maps, as a Translation holds them: {kind: (L, H, Tq, Tk) float32} (the same numbers:
    a captured pass and a plain one compute the weights alike)."""
    subs = {"enc": [c["self"] for c in capture["encoder"]], "dec": [c["self"] for c in capture["decoder"]],
            "cross": [c["cross"] for c in capture["decoder"]]}
    return {kind: torch.stack([sub["weights"][0] for sub in layers]).float().cpu().numpy()
            for kind, layers in subs.items()}


def read_only(tensors: list) -> np.ndarray:
    """Tensors stacked into one numpy array that nobody can change by accident (results may be shared)."""
    t = torch.stack([t.detach().cpu() for t in tensors])  # a learned position table is a parameter
    a = (t.float() if t.is_floating_point() else t).numpy()
    a.setflags(write=False)
    return a
