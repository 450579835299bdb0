"""Walk through the model: the sentence on the page followed through the Transformer, in the order the
tutorials teach it (token ids, embeddings and positions, scaled dot-product attention, multi-head, the
encoder layer's residual, LayerNorm and feed-forward, masked decoder self-attention, cross-attention,
the output layer and softmax, the greedy loop).

One stop at a time: one picture with this sentence's real numbers, its equation, a few sentences, and
a way into the detailed view. Every number comes from the model's own capture of one teacher-forced
pass over the greedy output (`Translator.inside`, the cached call the "Inside a head" view uses) and
from the translation itself, never from a second implementation.
"""

from dataclasses import dataclass

import numpy as np
import streamlit as st

import viz
from model.head_stats import head_divergence
from model.heads import KIND_NAMES
from model.i18n import N_, _
from viz.labels import ACTIVATIONS, token_labels

from . import Context, guess
from .calls import inside
from .state import MEAN, int_param, opening_layer, page_view, set_pick
from .widgets import chart, literal, token_chips, tutorial_names

STOP_KEY = "walk_stop"  # the stop shown, from 0 (the link counts from 1)


@dataclass(frozen=True)
class Stop:
    title: str
    equation: str  # LaTeX
    opens: str | None = None  # the detailed view one can open from here (its slug: the view switch's key)


# A pre-LN model's (the Annotated Transformer's) equations where they differ: the norm comes before the sub-layer.
PRE_LN = {4: r"x' = x + \mathrm{MultiHead}(\mathrm{LayerNorm}(x))",
          5: r"y = x' + \max(0,\, \mathrm{LayerNorm}(x')\,W_1 + b_1)\,W_2 + b_2"}

FINAL_NORM = {6: r"x^{(l+1)} = \mathrm{EncoderLayer}(x^{(l)}), \quad \mathrm{memory} = \mathrm{LayerNorm}(x^{(N)})",
              9: r"p(y_t \mid y_{<t}, x) = \mathrm{softmax}(\mathrm{LayerNorm}(h_t) W_{out} + b_{out}), \quad "
                 r"y_t = \arg\max p"}




def equation(n: int, cfg) -> str:
    """Stop n's equation as this model computes it: the paper's, or the pre-LN and final-norm variants, with the
    model's own activation in the feed-forward network."""
    if cfg.norm_position == "pre" and n in PRE_LN:
        found = PRE_LN[n]
    elif cfg.final_norm and n in FINAL_NORM:
        found = FINAL_NORM[n]
    else:
        found = STOPS[n].equation
    return found.replace(ACTIVATIONS["relu"][1], ACTIVATIONS[cfg.activation][1])


# The views a stop opens, by their names on the view switch (views/registry.py; the attention views are named by kind)
OPENS = {**KIND_NAMES, "positions": N_("Positional encodings"), "inside": N_("Inside a head"),
         "trace": N_("Decoding trace")}

STOPS = [
    Stop(N_("1. Words become token ids"), r"\text{sentence} \rightarrow \text{tokens} \rightarrow \text{ids}"),
    Stop(N_("2. Each id becomes a vector: embedding × √d plus position"),
         r"x_i = E[\mathrm{id}_i]\,\sqrt{d_{model}} + P[i]", "positions"),
    Stop(N_("3. Scaled dot-product attention, one head"), r"\mathrm{Attention}(Q,K,V) = "
         r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V", "inside"),
    Stop(N_("4. Multi-head: every head of the layer at once"), r"\mathrm{MultiHead}(x) = "
         r"\mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\,W^O", "enc"),
    Stop(N_("5. Residual connection and LayerNorm"), r"x' = \mathrm{LayerNorm}(x + \mathrm{MultiHead}(x))"),
    Stop(N_("6. The feed-forward network"), r"y = \mathrm{LayerNorm}(x' + \max(0,\, x'W_1 + b_1)\,W_2 + b_2)"),
    Stop(N_("7. The encoder stack"), r"x^{(l+1)} = \mathrm{EncoderLayer}(x^{(l)}), \quad "
         r"\mathrm{memory} = x^{(N)}", "enc"),
    Stop(N_("8. Masked decoder self-attention"), r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V, "
         r"\quad M_{ij} = -\infty \text{ for } j > i", "dec"),
    Stop(N_("9. Cross-attention: the decoder reads the source"), r"Q = \text{decoder state},\ "
         r"K = V = \text{memory (encoder output)}", "cross"),
    Stop(N_("10. The output layer and softmax: the next word"), r"p(y_t \mid y_{<t}, x) = "
         r"\mathrm{softmax}(h_t W_{out} + b_{out}), \quad y_t = \arg\max p", "trace"),
    Stop(N_("11. The loop: the chosen word goes back in"), r"y_t = \arg\max_w p(w \mid y_1 \dots y_{t-1}, x), "
         r"\ \text{until } \langle eos \rangle", "trace"),
]


def read_link(params, cfg, notes: list):
    stop = int_param(params, "stop", 1, len(STOPS), notes)
    if stop is not None:
        st.session_state[STOP_KEY] = stop - 1


def link_params(cfg) -> dict:
    return {"stop": str(st.session_state.get(STOP_KEY, 0) + 1)}


def move(by: int):
    st.session_state[STOP_KEY] = min(max(st.session_state.get(STOP_KEY, 0) + by, 0), len(STOPS) - 1)


def open_view(slug: str, layer: int | None = None):
    """Leave the walk for a detailed view, an attention view at the layer (and the mean of heads) this stop showed."""
    if slug in KIND_NAMES:
        set_pick(slug, layer, MEAN)
    st.session_state.view = slug


@page_view  # not a fragment: its way into a detailed view switches the whole page
def walk_view(ctx: Context):
    r = ctx.result
    n = st.session_state.setdefault(STOP_KEY, 0)
    stop = STOPS[n]
    nav = st.container(horizontal=True, vertical_alignment="center")
    nav.button(_("◂ Previous"), on_click=move, args=(-1,), disabled=n == 0, shortcut="left", key="walk_prev")
    nav.button(_("Next ▸"), on_click=move, args=(1,), disabled=n == len(STOPS) - 1, shortcut="right", key="walk_next")
    nav.caption(_("Stop {n} of {total}").format(n=n + 1, total=len(STOPS))
                + "<span class='keys-hint'> · " + _("the ← and → keys step too") + "</span>",
                unsafe_allow_html=True)  # the hint hides on a touch screen (widgets.CSS)
    st.markdown(f"#### {_(stop.title)}")
    st.latex(equation(n, ctx.cfg))
    ins = inside(ctx.checkpoint, r.source, tuple(s.token for s in r.steps))
    word = guess.followed_word(ctx)  # the first real word: the token the pictures follow
    q = guess.stop_question(ctx, ins, word, n) if guess.on() else None
    if guess.hidden(q):  # guess first: the stop's picture (and its text, which would tell) wait for the answer
        return
    DRAW[n](ctx, ins, word, q)
    if stop.opens:
        layer = {"enc": opening_layer(r, "enc") if n == 3 else ctx.cfg.n_enc_layers - 1, "dec": 0,
                 "cross": ctx.cfg.n_dec_layers - 1}.get(stop.opens)
        st.button(_("Open “{view}” for every detail").format(view=_(OPENS[stop.opens])), on_click=open_view,
                  args=(stop.opens, layer), key="walk_open")


def marked(q, fig, where, xaxis="x"):
    """The learner's guess and the answer outlined on the stop's picture; `where` gives a cell (x, y) per option."""
    if q is not None and guess.given(q) is not None:
        viz.mark_guess(fig, where(guess.given(q)), where(q.answer), xaxis)
    return fig


def text(*sentences: str):
    st.markdown(" ".join(sentences))


def tokens_and_ids(ctx: Context, ins, word: int, q=None):
    r = ctx.result
    ids = ctx.translator.source_ids(r.source)[1]
    v, source = ctx.translator.src_vocab, ctx.names[0]
    vocab = dict(source=source, size=ctx.cfg.src_vocab_size, unk=v.unk, unk_id=v.unk_id, sos=v.sos, eos=v.eos)
    if v.pieces is None:
        text((_("The {source} sentence is lowercased and cut into tokens (spaCy's rules), and each token is looked "
                "up in the model's vocabulary of {size:,} {source} tokens; an unknown one becomes `{unk}` (id "
                "{unk_id}).") if v.lower else
              _("The {source} sentence is cut into tokens (spaCy's rules), and each token is looked up in the model's "
                "vocabulary of {size:,} {source} tokens; an unknown one becomes `{unk}` (id {unk_id}).")
              ).format(**vocab),
             _("`{sos}` and `{eos}` mark where the sentence starts and ends.").format(**vocab))
    else:  # a Marian model's: SentencePiece pieces (Kudo and Richardson, 2018), "▁" where a word starts
        text(_("The {source} sentence is cut into pieces by the model's own SentencePiece model: a frequent word is "
               "one piece, a rare one several, and “▁” marks a piece that starts a word. Each piece is looked up in "
               "the model's vocabulary of {size:,} pieces (an unknown one becomes `{unk}`, id {unk_id}).")
             .format(**vocab),
             _("`{eos}` marks where the sentence ends; there is no start token.").format(**vocab))
    st.dataframe({_("position"): list(range(len(ids))), _("token"): r.src_tokens, "id": ids}, hide_index=True)


def embedding(ctx: Context, ins, word: int, q=None):
    e, tok = ins.embedding["src"], ins.src_tokens[word]
    D = e["tokens"].shape[1]
    kind = {"halves": _("Marian's sinusoidal table: all the sines, then all the cosines"), "learned": _("learned"),
            "sinusoidal": _("sinusoidal")}.get(ctx.cfg.positions, ctx.cfg.positions)
    text(_("Token “{token}” at position {word}: its learned embedding row times √{D} = {root:.1f}, plus the vector of "
           "position {word} ({kind} positions).").format(token=literal(tok), word=word, D=D, root=np.sqrt(D),
                                                         kind=kind),
         _("Their sum is what the first encoder layer reads."))
    rows = np.stack([e["tokens"][word], e["positions"][word], e["tokens"][word] + e["positions"][word]])
    chart(viz.vector_strips(rows, [_("embedding × √d"), _("position {word}").format(word=word), _("sum: x")],
                            value=_("value"), title=_("“{token}”: {D} numbers each").format(token=tok, D=D)),
          key="walk_embedding", name="walk-embedding")


def one_head(ctx: Context, ins, word: int, q=None):
    tr = ins.head("enc", 0, 0, word)
    text(_("Encoder layer 1, head 1, for “{token}”: its query q meets every token's key k.").format(
             token=literal(tr.query_token)),
         _("The scores q·k are divided by √{d} and a softmax turns them into weights that sum to 1; the head's output "
           "is the weighted sum of the value vectors v.").format(d=len(tr.q)))
    fig = viz.score_chain(tr.key_tokens, tr.scores, tr.scaled, tr.weights, tr.mask,
                          title=_("q·k → scaled → softmax, for “{token}”").format(token=tr.query_token))
    chart(marked(q, fig, lambda option: (None, q.options.index(option)), "x3"), key="walk_head", name="walk-head")


def all_heads(ctx: Context, ins, word: int, q=None):
    layer = opening_layer(ctx.result, "enc")
    divergence = head_divergence(ctx.result.encoder_attentions)
    maps = ctx.result.encoder_attentions[layer:layer + 1]
    H = maps.shape[1]
    text(_("Each layer runs {H} such heads side by side, each with its own W_Q, W_K, W_V on a {d}-dimensional "
           "slice, so each can look at different things.").format(H=H, d=ctx.cfg.d_model // H),
         _("W_O mixes their outputs back into one vector per token."))
    others = ", ".join(_("{bits:.2f} in layer {layer}").format(bits=d, layer=i + 1)
                       for i, d in enumerate(divergence) if i != layer)
    st.caption(_("Here encoder layer {layer}, the layer whose heads differ most on this sentence: their rows differ "
                 "by {bits:.2f} bits on average (the mean Jensen–Shannon divergence between two heads' rows; 0 = "
                 "alike, 1 = no key in common), against {others}.").format(layer=layer + 1, bits=divergence[layer],
                                                                          others=others)
               + " " + tutorial_names(ctx.checkpoint))
    (q, q_unk), (k, k_unk) = token_labels(ctx.result, "src"), token_labels(ctx.result, "src")
    chart(viz.model_view(maps, q, k, query_unknown=q_unk, key_unknown=k_unk, first_layer=layer,
                         title=_("Encoder layer {layer}: all {H} heads").format(layer=layer + 1, H=H)),
          key="walk_heads", name="walk-heads",
          width="content")


def add_norm(ctx: Context, ins, word: int, q=None):
    a = ins.sublayers["enc"]
    if ctx.cfg.norm_position == "pre":  # the capture's "normed" is then LayerNorm(x), what the heads read
        text(_("This model is pre-LN: LayerNorm rescales what came in to mean 0 and variance 1 (then by learned "
               "weights) before the heads read it, and the attention output is added to the unnormalised input "
               "(the residual connection keeps the token's own information)."))
        rows = np.stack([a[name][0, word] for name in ("x", "normed", "attn_out", "residual")])
        labels = [_("x (input)"), _("LayerNorm(x): the heads' input"), _("attention output"), _("x + attention")]
    else:
        text(_("The attention output is added to what came in (the residual connection keeps the token's own "
               "information), and LayerNorm rescales the sum to mean 0 and variance 1, then by learned weights."))
        rows = np.stack([a[name][0, word] for name in ("x", "attn_out", "residual", "normed")])
        labels = [_("x (input)"), _("attention output"), _("x + attention"), "LayerNorm"]
    chart(viz.vector_strips(rows, labels,
                            title=_("Encoder layer 1, “{token}”").format(token=ins.src_tokens[word])),
          key="walk_addnorm", name="walk-add-norm")


def feed_forward(ctx: Context, ins, word: int, q=None):
    f, a = ins.ffn["encoder"], ins.sublayers["enc"]
    hidden = f["hidden"][0, word]
    pre = ctx.cfg.norm_position == "pre"
    name, formula = ACTIVATIONS[ctx.cfg.activation]
    numbers = dict(units=hidden.size, name=name, kept=int((hidden > 0).sum()), d=ctx.cfg.d_model)
    text((_("Each token then goes alone through the same two-layer network: {units} hidden units, of which {name} "
            "keeps {kept} here, and back to {d}.") if ctx.cfg.activation == "relu" else
          _("Each token then goes alone through the same two-layer network: {units} hidden units, of which {name} "
            "leaves {kept} above 0 here, and back to {d}.")).format(**numbers),
         _("Again a LayerNorm (before the network: this model is pre-LN) and a residual connection; the result is the "
           "layer's output.") if pre else
         _("Again a residual connection and a LayerNorm; the result is the layer's output."))
    chart(viz.vector_strips(hidden[None], [_("hidden units (after {name})").format(name=name)],
                            title="max(0, x'W₁ + b₁)" if name == "ReLU" else f"{name}(x'W₁ + b₁)"),
          key="walk_hidden", name="walk-ffn-hidden")
    first = a["residual"] if pre else a["normed"]  # the FFN sublayer's input x': the attention sublayer's output
    rows = np.stack([first[0, word], f["residual"][0, word], a["layer_output"][0, word]])
    chart(viz.vector_strips(rows, [_("x' (input)"), "x' + FFN(LayerNorm(x'))" if pre else "x' + FFN(x')",
                                   _("layer output") if pre else _("LayerNorm: layer output")],
                            title=_("Encoder layer 1, “{token}”").format(token=ins.src_tokens[word])),
          key="walk_ffn", name="walk-ffn")


def encoder_stack(ctx: Context, ins, word: int, q=None):
    out = ins.sublayers["enc"]["layer_output"]
    text(_("{n} such layers, one after the other: each reads the previous one's output.").format(n=out.shape[0]),
         _("The last layer's vectors, one per {source} token, are the memory the decoder will read.").format(
             source=ctx.names[0]))
    rows = np.stack([ins.sublayers["enc"]["x"][0, word], *out[:, word]])
    chart(viz.vector_strips(rows, [_("input"), *(_("after layer {layer}").format(layer=i + 1)
                                                 for i in range(out.shape[0]))],
                            title=_("“{token}” through the encoder").format(token=ins.src_tokens[word])),
          key="walk_stack", name="walk-encoder-stack")


def masked_self(ctx: Context, ins, word: int, q=None):
    r = ctx.result
    text(_("The decoder writes {target} one token at a time. Its self-attention may look only at what is already "
           "written: the future is masked (grey), so row t sees tokens 0 to t.").format(target=ctx.names[1]))
    rows = token_labels(r, "tgt")[0]
    fig = viz.attention_heatmap(r.decoder_attentions[0].mean(0), rows, rows, causal=True,
                                title=_("Decoder layer 1, mean of heads"))  # the guess: the last key step 3 sees
    chart(marked(q, fig, lambda option: (int(option) - 1, 2)), key="walk_masked", name="walk-masked",
          width="content")


def cross(ctx: Context, ins, word: int, q=None):
    r = ctx.result
    L = r.cross_attentions.shape[0]
    text(_("In every decoder layer, after its self-attention, each {target} position asks the {source} sentence: the "
           "queries come from the decoder, the keys and values from the encoder's memory.").format(
             target=ctx.names[1], source=ctx.names[0]),
         _("Here, where the last layer's heads looked, on average, while choosing each word."))
    rows, (k, k_unk) = token_labels(r, "tgt")[0], token_labels(r, "src")
    fig = viz.attention_heatmap(r.cross_attentions[L - 1].mean(0), rows, k, key_unknown=k_unk,
                                title=_("Cross-attention, layer {layer}, mean of heads").format(layer=L))
    row = guess.first_word_step(r)  # the step the question asks about (guess.map_question)
    chart(marked(q, fig, lambda option: (q.options.index(option), row)), key="walk_cross", name="walk-cross",
          width="content")


def output_layer(ctx: Context, ins, word: int, q=None):
    s = ctx.result.steps[0]
    text(_("The decoder's last vector goes through one linear layer to a score for each of the {size:,} {target} "
           "tokens, and the softmax makes them probabilities.").format(size=ctx.cfg.tgt_vocab_size,
                                                                        target=ctx.names[1]),
         _("Greedy decoding takes the most likely: “{token}” with {p:.3f}.").format(token=literal(s.token), p=s.prob))
    fig = viz.candidates_bar(s.top, s.token, title=_("Step 1: the most likely next tokens"))
    bars = [tok for tok, _p in s.top]  # the bars, most likely on top
    chart(marked(q, fig, lambda option: (None, bars.index(option))), key="walk_output", name="walk-output")


def loop(ctx: Context, ins, word: int, q=None):
    steps = [s.token for s in ctx.result.steps]
    text(_("The chosen token is appended to the decoder's input and everything from stop 8 runs again for the next "
           "position, until the model chooses `{eos}`: {n} steps for this sentence.").format(
             eos=ctx.translator.tgt_vocab.eos, n=len(steps)),
         _("The decoding trace goes through them one by one."))
    for t in range(min(len(steps), 6)):
        st.markdown(_("Step {step}:").format(step=t + 1) + " " + token_chips(ctx.result.tgt_tokens[:t + 1]) + " → "
                    + token_chips([steps[t]], current=0), unsafe_allow_html=True)
    if len(steps) > 6:
        st.caption(_("… and {n} more steps.").format(n=len(steps) - 6))


DRAW = [tokens_and_ids, embedding, one_head, all_heads, add_norm, feed_forward, encoder_stack, masked_self, cross,
        output_layer, loop]
assert len(DRAW) == len(STOPS)
