"""Does attention explain the translation? Norm-based attention and ALTI+ source/prefix contributions.

Every number is computed from one teacher-forced pass's capture (`Extras(capture=...)`, model/transformer.py)
and the model's own weights; nothing here runs the network again. Shape legend: L layers, H heads, S source
length, T decoder inputs (<sos> then every output token but the last), D d_model, hs head size.

Norm-based attention (Kobayashi, Kuribayashi, Yokoi and Inui, EMNLP 2020, "Attention is Not Only a
Weight: Analyzing Transformers with Vector Norms"): a head's output at query i is sum_j alpha_ij f^h(x_j)
(+ b_O after the heads are mixed), with f^h(x) = (x W_V^h + b_V^h) W_O^h, W_O^h the hs columns of W_O that
read head h. ||alpha_ij f^h(x_j)|| = alpha_ij ||f^h(x_j)|| says how much key j actually moved query i through
head h; a large weight on a key with a small value vector moves little. b_V is inside f (it rides with every
value); b_O is not (it is added once per query, not per key). `weighted_norms`.

ALTI+ (Ferrando, Gallego, Alastruey, Escolano and Costa-jussa, EMNLP 2022, "Towards Opening the Black Box of
Neural Machine Translation: Source and Target Interpretations of the Transformer"), building on ALTI
(Ferrando, Gallego and Costa-jussa, EMNLP 2022, "Measuring the Mixing of Contextual Information in the
Transformer"). Per attention block (attention + residual + post-LN LayerNorm) and query i:
    z_ij = sum_h alpha^h_ij f^h(x_j)  (+ x_i when j = i: the residual)       the vector key j adds, before LN
    cross-attention: the keys are the encoder outputs; the residual x_i is one more vector, "key" S
    LN(u) = (u - mean(u)) / sigma(u) * gamma + beta is linearised per token: sigma_i = sqrt(Var(r_i) + eps) of
    the real residual sum r_i (the LayerNorm's own number) is held fixed, so
    T_i(x_j) = (z_ij - mean(z_ij)) / sigma_i * gamma,   y_i = sum_j T_i(x_j) + (b_O - mean(b_O)) / sigma_i * gamma
    + beta = LN(r_i), the block's real output (tested). sigma_i is the LayerNorm's own divisor: the Annotated
    Transformer's LayerNorm divides by the unbiased standard deviation plus eps instead (LayerNorm.sigma).
    A pre-LN block (x_i + sum_h alpha^h_ij f^h(LN(x_j)) + b_O, the Annotated Transformer's) ends in the sum itself:
    nothing to linearise, T_i(x_j) = z_ij with f^h read off LN(x_j) (which depends on x_j alone), and
    y_i = sum_j T_i(x_j) + b_O = r_i, the block's real output (tested). A final norm after the last layer mixes no
    tokens and is left out, as ALTI+ leaves out the output layer.
    c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), then each row divided by its sum (Manhattan distance: a
    vector close to the output contributes much; one no closer than zero contributes nothing).
The feed-forward block is not decomposed (the paper's choice: it mixes no tokens), so a layer's contributions
are its attention block's. Layers combine by rollout: encoder R = C_L ... C_1 (source tokens -> encoder
outputs). In decoder layer l, the cross block's residual share c_i,S passes on through the self block:
D^l = [C_cross^l[:, :S] R  |  C_cross^l[:, S, None] * C_self^l]  (T x (S + T), rows sum to 1), and the
decoder rollout is P^1 = D^1, P^l = [D^l_src + D^l_self P^(l-1)_src  |  D^l_self P^(l-1)_self], rows
renormalised. The last layer's row t says how much each source token and each prefix token (<sos> .. y_t)
contributed to the prediction at step t; its source part summed is the step's source share.

Dale et al. (ACL 2023, "Detecting and Mitigating Hallucinations in Machine Translation: Model Internal
Workings Alone Do Well, Sentence Similarity Even Better") flag hallucinations by a low ALTI+ source
contribution; model/source_share.py writes the test-set distribution of the share (CHECKPOINT/source_share.json)
so that a sentence's share can be read against it.
"""

import torch


def attention_sublayers(capture: dict, model) -> dict:
    """{kind: [(captured sub-layer dict, its MultiHeadAttention, its AddNorm), one per layer]}."""
    enc, dec = capture["encoder"], capture["decoder"]
    return {"enc": [(c["self"], m.self_attn, m.ln_self) for c, m in zip(enc, model.encoder)],
            "dec": [(c["self"], m.self_attn, m.ln_self) for c, m in zip(dec, model.decoder)],
            "cross": [(c["cross"], m.cross_attn, m.ln_cross) for c, m in zip(dec, model.decoder)]}


def value_outputs(sub: dict, attn, row: int = 0) -> torch.Tensor:
    """f^h(x_j) = (x_j W_V^h + b_V^h) W_O^h of every head and key, float64: (H, Tk, D).

    `v` in the capture is already kv W_V + b_V split into heads; W_O^h are the hs input columns of w_o that read
    head h (nn.Linear computes x W^T, so W_O^h as a map is weight[:, h*hs:(h+1)*hs]^T).
    """
    v = sub["v"][row].double()  # (H, Tk, hs)
    H, _, hs = v.shape
    w_o = attn.w_o.weight.detach().double()  # (D, H*hs)
    per_head = w_o.view(-1, H, hs).permute(1, 2, 0)  # (H, hs, D)
    return v @ per_head  # (H, Tk, D)


@torch.no_grad()
def weighted_norms(capture: dict, model, row: int = 0) -> dict:
    """Kobayashi et al. (2020): {kind: (L, H, Tq, Tk) numpy} of ||alpha_ij f^h(x_j)|| for batch row `row`."""
    out = {}
    for kind, layers in attention_sublayers(capture, model).items():
        norms = []
        for sub, attn, _ in layers:
            f_norm = value_outputs(sub, attn, row).norm(dim=-1)  # (H, Tk)
            norms.append(sub["weights"][row].double() * f_norm[:, None, :])  # (H, Tq, Tk)
        out[kind] = torch.stack(norms).float().cpu().numpy()
    return out


@torch.no_grad()
def decompose(sub: dict, attn, ln, cross: bool, row: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """One attention block's output split by input vector (ALTI), float64.

    Returns T (Tq, K, D) and y (Tq, D) with y_i = sum_j T[i, j] + the bias terms = the block's output: post-LN
    LN(x_i + attn_out_i), its LayerNorm linearised per token; pre-LN x_i + attn_out_i, where nothing follows the sum
    (the LayerNorm before the heads reads x_j alone, so it rides inside f). K = Tk for self-attention (the residual
    x_i is folded into key i), Tk + 1 for cross-attention (the residual is the last vector).
    """
    x = sub["stream"][row].double()  # (Tq, D): the residual stream (post-LN: the heads' input itself)
    weights = sub["weights"][row].double()  # (H, Tq, Tk)
    mixed = torch.einsum("hqk,hkd->qkd", weights, value_outputs(sub, attn, row))  # (Tq, Tk, D)
    if cross:
        z = torch.cat([mixed, x[:, None, :]], dim=1)  # (Tq, Tk + 1, D)
    else:
        z = mixed.clone()
        idx = torch.arange(x.size(0))
        z[idx, idx] += x  # the residual belongs to the query's own token
    b_o = attn.w_o.bias.detach().double()
    if ln.pre:
        return z, z.sum(1) + b_o
    residual = sub["residual"][row].double()  # (Tq, D): what the LayerNorm normalised
    sigma = ln.sigma(residual)  # (Tq, 1), held fixed: the linearisation
    gamma, beta = ln.weight.detach().double(), ln.bias.detach().double()  # (D,)
    T = (z - z.mean(-1, keepdim=True)) / sigma[:, None] * gamma  # (Tq, K, D)
    y = T.sum(1) + (b_o - b_o.mean()) / sigma * gamma + beta  # (Tq, D)
    return T, y


def block_contributions(sub: dict, attn, ln, cross: bool, row: int = 0) -> torch.Tensor:
    """ALTI's c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), rows normalised: (Tq, K) float64, K as decompose.

    A row where no vector is closer to y_i than zero is (never seen on the shipped models) all zero; it gives
    everything to the residual, the query's own token, rather than 0/0.
    """
    T, y = decompose(sub, attn, ln, cross, row)
    c = (y.abs().sum(-1, keepdim=True) - (y[:, None, :] - T).abs().sum(-1)).clamp(min=0)  # (Tq, K)
    Tq, K = c.shape
    own = torch.full((Tq,), K - 1) if cross else torch.arange(Tq)  # (Tq,) the residual's column
    total = c.sum(-1, keepdim=True)
    empty = total[:, 0] == 0
    c[empty, own[empty]] = 1.0
    return c / c.sum(-1, keepdim=True)


def layer_contributions(capture: dict, model, row: int = 0) -> dict:
    """{"enc": (L, S, S), "dec": (L, T, T), "cross": (L, T, S + 1)} float64 tensors: each block's c_ij."""
    return {kind: torch.stack([block_contributions(sub, attn, ln, kind == "cross", row) for sub, attn, ln in layers])
            for kind, layers in attention_sublayers(capture, model).items()}


def rollout(enc: torch.Tensor, dec: torch.Tensor, cross: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ALTI+'s rollout: (encoder rollout (S, S), decoder rollout (L_dec, T, S + T)), rows summing to 1.

    enc (Le, S, S), dec (Ld, T, T), cross (Ld, T, S + 1) from layer_contributions. Row t of the decoder
    rollout's layer l: how much each source token (first S columns) and each decoder input (last T) contributed
    to decoder layer l's output at position t.
    """
    S = enc.size(-1)
    R = torch.eye(S, dtype=enc.dtype)  # (S, S)
    for C in enc:  # first layer first: R maps source tokens to this layer's outputs
        R = C @ R
    layers, prev = [], None
    for C_self, C_cross in zip(dec, cross):
        src = C_cross[:, :S] @ R  # (T, S) through the encoder outputs to the source tokens
        self_ = C_cross[:, S:] * C_self  # (T, T) the residual's share, passed on through the self block
        if prev is not None:
            src, self_ = src + self_ @ prev[:, :S], self_ @ prev[:, S:]
        prev = torch.cat([src, self_], dim=-1)  # (T, S + T)
        prev = prev / prev.sum(-1, keepdim=True)
        layers.append(prev)
    return R, torch.stack(layers)


def contributions(capture: dict, model, row: int = 0) -> dict:
    """ALTI+ of one teacher-forced pass, as numpy float64: "layers" ({kind: per-block contributions}),
    "encoder_rollout" (S, S), "rollout" (L_dec, T, S + T), "source" (T, S), "prefix" (T, T, zero above the
    diagonal) and "source_share" (T,) of the last layer."""
    layers = layer_contributions(capture, model, row)
    R, total = rollout(layers["enc"], layers["dec"], layers["cross"])
    S = R.size(0)
    last = total[-1]  # (T, S + T)
    return {"layers": {k: v.numpy() for k, v in layers.items()}, "encoder_rollout": R.numpy(),
            "rollout": total.numpy(), "source": last[:, :S].numpy(), "prefix": last[:, S:].numpy(),
            "source_share": last[:, :S].sum(-1).numpy()}


@torch.no_grad()
def direct_logits(capture: dict, model, output_ids, row: int = 0, split: dict | None = None) -> dict:
    """The written words' logits split into what each part of the decoder wrote, along the residual stream
    (docs/contract.md, "Feed-forward blocks in the logit").

    Every sub-layer adds its output to the stream; a post-LN LayerNorm is linearised as ALTI+ does (its divisor
    sigma held at its real value): L(v) = gamma (v - mean v) / sigma, its beta one more part. A part's vector at the
    end is the chain of the later norms' L applied to it (a pre-LN block adds it unchanged; a final norm is one
    more L). The parts: "embedding" (token x scale + position), "L{l} self", "L{l} cross", "L{l} ffn" (l from 1),
    "norm biases" (every beta, carried on); their sum is the last state the generator reads (tested), so
    logit_t(y_t) = sum of w_y . part + b_y exactly. split: {layer (from 0): {name: (T, D) or (T, n, D)}} reads a
    feed-forward block's output as named pieces that sum to it (a transcoder's features and error), each its own
    part; a piece (T, n, D) is n vectors per step (one per feature), summed into its part.

    Returns {"parts": names, "logits": (T, P) float64 numpy (part p's share of the logit of output_ids[t] at
    step t), "bias": (T,) the generator's bias, "total": (T,) the logits themselves, "pieces": {name: (T, n)} each
    vector's share of a piece given as (T, n, D)}.
    """
    te = capture["tgt_embed"]
    parts = {"embedding": te["tokens"][row] + te["positions"]}
    biases = torch.zeros_like(parts["embedding"])
    pre = model.cfg.norm_position == "pre"

    def carry(ln, residual):
        nonlocal parts, biases
        sigma = ln.sigma(residual)  # (T, 1)

        def lin(v):  # v (T, D) or (T, n, D): each step's vectors by that step's sigma
            return ln.weight * (v - v.mean(-1, keepdim=True)) / sigma.view(len(sigma), *[1] * (v.dim() - 1))

        parts = {k: lin(v) for k, v in parts.items()}
        biases = lin(biases) + ln.bias

    for l, (layer, cap) in enumerate(zip(model.decoder, capture["decoder"])):
        for sub, ln in (("self", layer.ln_self), ("cross", layer.ln_cross), ("ffn", layer.ln_ffn)):
            out = cap[sub]["out"] if sub == "ffn" else cap[sub]["attn_out"]
            if sub == "ffn" and split and l in split:
                parts.update({f"L{l + 1} ffn {name}": v for name, v in split[l].items()})
            else:
                parts[f"L{l + 1} {sub}"] = out[row]
            if not pre:
                carry(ln, cap[sub]["residual"][row])
    if model.cfg.final_norm:
        carry(model.dec_norm, capture["decoder"][-1]["output"][row])
    parts["norm biases"] = biases
    ids = torch.as_tensor(list(output_ids), device=biases.device)
    w = model.generator.weight[ids]  # (T, D)
    b = model.generator.bias[ids] if model.generator.bias is not None else torch.zeros(len(ids))
    each = {k: (w.view(len(ids), *[1] * (v.dim() - 2), -1) * v).sum(-1).double() for k, v in parts.items()}
    logits = torch.stack([v.reshape(len(ids), -1).sum(-1) for v in each.values()], 1)
    return {"parts": list(parts), "logits": logits.cpu().numpy(), "bias": b.double().cpu().numpy(),
            "total": (logits.sum(1) + b.double()).cpu().numpy(),
            "pieces": {k: v.cpu().numpy() for k, v in each.items() if v.dim() > 1}}
