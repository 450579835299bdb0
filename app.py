"""Inside a Transformer translator: every head of every layer, and decoding step by step.

    streamlit run app.py

The page runs the model once per sentence (cached), then every view reads the plain
`Translation` result; switching view, layer, head or step only redraws a fragment.
"""

import html
import json
import os
from pathlib import Path

import numpy as np
import streamlit as st

import viz
from model.checkpoint import CHECKPOINT_ENV, DEFAULT_CHECKPOINT
from model.errors import CheckpointError, InputError
from model.evaluate import sentence_bleu
from model.translator import Translator

ROOT = Path(__file__).resolve().parent
VIEWS = ["Encoder self-attention", "Decoder self-attention", "Cross-attention", "Decoding trace",
         "Positional encodings", "Ablate heads", "Head importance", "Reference", "Beam search"]
KIND_VIEWS = {"enc": "Encoder self-attention", "dec": "Decoder self-attention", "cross": "Cross-attention"}
ATTENTION = {  # view -> (result field, query side, key side, causal, caption)
    "Encoder self-attention": (
        "encoder_attentions", "src", "src", False,
        "Each German token (row) builds its new representation as a weighted mix of all German tokens "
        "(columns). Each row sums to 1."),
    "Decoder self-attention": (
        "decoder_attentions", "tgt", "tgt", True,
        "Each decoder input (row: <sos> then the English produced so far) looks back at itself and earlier "
        "English tokens (columns). Grey cells are future positions, masked: the model cannot see them."),
    "Cross-attention": (
        "cross_attentions", "tgt", "src", False,
        "While predicting the next English word, each decoder position (row) reads from the German source "
        "(columns). Bright cells show which source words informed each step; rows sum to 1."),
}


@st.cache_resource(show_spinner="Loading the model…")
def load_translator(checkpoint: str | None) -> Translator:
    """One model for every session; never mutated (head masks and the like are call arguments)."""
    return Translator.load(checkpoint)


# Every model call is cached by its arguments: changing a view, layer, head or step never re-runs the model.
@st.cache_data(max_entries=128, show_spinner=False)
def translate(checkpoint: str | None, sentence: str, heads_off: str = "", force_step=None, force_token=None):
    force = None if force_step is None else {force_step: force_token}
    return load_translator(checkpoint).translate(sentence, heads_off=heads_off, force=force)


@st.cache_data(max_entries=64, show_spinner=False)
def analyze(checkpoint: str | None, sentence: str, output_tokens: tuple, heads_off: str):
    tr = load_translator(checkpoint)
    return tr.analyze(sentence, tr.tgt_vocab.encode(list(output_tokens)), heads_off=heads_off)


@st.cache_data(max_entries=64, show_spinner=False)
def score_reference(checkpoint: str | None, sentence: str, reference: str):
    return load_translator(checkpoint).score_reference(sentence, reference)


@st.cache_data(max_entries=32, show_spinner="Searching with beams…")
def beam(checkpoint: str | None, sentence: str, width: int):
    return load_translator(checkpoint).beam(sentence, width)


@st.cache_data(show_spinner=False)
def position_tables(checkpoint: str | None) -> dict:
    return load_translator(checkpoint).position_tables()


@st.cache_data(show_spinner=False)
def head_importance(checkpoint: str | None) -> dict | None:
    path = Path(checkpoint or DEFAULT_CHECKPOINT) / "head_importance.json"
    return json.loads(path.read_text()) if path.is_file() else None


@st.cache_data(show_spinner=False)
def examples() -> list[dict]:
    return json.loads((ROOT / "assets/examples.json").read_text(encoding="utf-8"))["examples"]


def use_example():
    choice = st.session_state.example
    if choice:
        st.session_state.sentence = choice
        st.session_state.reference = next(e["en"] for e in examples() if e["de"] == choice)


def token_chips(tokens, unknown=None, current=None) -> str:
    """Tokens as escaped HTML chips: the user's text is shown as text, never markup."""
    unknown = unknown or [False] * len(tokens)
    chips = []
    for i, (t, u) in enumerate(zip(tokens, unknown)):
        cls = "chip unk" if u else "chip now" if i == current else "chip"
        tip = ' title="unknown to the model: read as &lt;unk&gt;"' if u else ""
        chips.append(f'<span class="{cls}"{tip}>{html.escape(t) or "&nbsp;"}</span>')
    return " ".join(chips)


def diff_chips(diff) -> str:
    style = {"same": "chip", "removed": "chip del", "added": "chip add"}
    return " ".join(f'<span class="{style[op]}">{html.escape(t)}</span>' for op, t in diff)


def head_label(item: str) -> str:
    """'cross.1' -> 'layer 2 (all heads)'; 'cross.1.3' -> 'layer 2, head 4' (the page counts from 1)."""
    parts = item.split(".")
    return f"layer {int(parts[1]) + 1}" + (f", head {int(parts[2]) + 1}" if len(parts) == 3 else " (all heads)")


CHIP_CSS = """<style>
.chip {display:inline-block; padding:1px 7px; margin:2px 1px; border-radius:6px; background:#eef1f6;
       font-family: ui-monospace, monospace; font-size:0.92em}
.chip.unk {background:#fff1e6; border:1.5px dashed #e0501a; color:#a83800}
.chip.now {background:#ff5000; color:white}
.chip.del {background:#fde2e2; text-decoration:line-through; color:#9b1c1c}
.chip.add {background:#dcfce7; color:#14532d; font-weight:600}
.translation {font-size:1.6em; font-weight:600; margin:0.1em 0 0.3em 0}
</style>"""


def sides(result, side):
    if side == "src":
        return result.src_tokens, result.src_unknown
    return result.tgt_tokens, None


# --- views -----------------------------------------------------------------------------------

@st.fragment
def attention_view(result, view: str):
    field, q_side, k_side, causal, caption = ATTENTION[view]
    maps = getattr(result, field)
    L, H = maps.shape[:2]
    q_tokens, q_unk = sides(result, q_side)
    k_tokens, k_unk = sides(result, k_side)
    st.caption(caption + " Hover a cell for the exact weight. Same 0–1 colour scale everywhere.")
    c1, c2 = st.columns([1, 3])
    layer = c1.selectbox("Layer", range(L), format_func=lambda i: f"layer {i + 1}", key=f"{field}_layer")
    head = c2.segmented_control("Head", ["mean", *range(H)], key=f"{field}_head", default="mean", required=True,
                                format_func=lambda h: "mean of heads" if h == "mean" else f"head {h + 1}")
    head = None if head == "mean" else head
    left, right = st.columns([2, 3])
    with left:
        name = "mean of all heads" if head is None else f"head {head + 1}"
        st.plotly_chart(viz.attention_heatmap(viz.select_head(maps, layer, head), q_tokens, k_tokens, causal=causal,
                                              query_unknown=q_unk, key_unknown=k_unk,
                                              title=f"Layer {layer + 1}, {name}"), key=f"{field}_one")
    with right:
        st.plotly_chart(viz.model_view(maps, q_tokens, k_tokens, causal=causal, query_unknown=q_unk,
                                       key_unknown=k_unk,
                                       title=f"All {L} layers × {H} heads (rows: queries, columns: keys)"),
                        key=f"{field}_grid")


def move_step(delta: int, n_steps: int):
    st.session_state.trace_step = min(max(st.session_state.trace_step + delta, 1), n_steps)


def slider_moved():
    st.session_state.trace_step = st.session_state.step_slider


@st.fragment
def trace_view(result):
    n = len(result.steps)
    # The step lives in its own key, not the slider's: it survives view changes, and a new sentence
    # keeps it (clamped when the new output is shorter) instead of jumping back to the start.
    st.session_state.trace_step = min(st.session_state.get("trace_step", 1), n)
    st.caption("Greedy decoding picks the most likely token at every step. Step through it: what the model "
               "considered, how sure it was, and where each head looked while choosing.")
    b1, b2, b3 = st.columns([1.3, 1.1, 7.6], vertical_alignment="center")
    b1.button("◀ Previous", on_click=move_step, args=(-1, n), disabled=st.session_state.trace_step <= 1)
    b2.button("Next ▶", on_click=move_step, args=(1, n), disabled=st.session_state.trace_step >= n)
    if n > 1:
        st.session_state.step_slider = st.session_state.trace_step
        b3.slider("Step", 1, n, key="step_slider", on_change=slider_moved, label_visibility="collapsed")
    t = st.session_state.trace_step - 1
    step = result.steps[t]
    st.markdown(f"**Step {t + 1} of {n}.** Output so far: " +
                token_chips([s.token for s in result.steps[:t + 1]], current=t), unsafe_allow_html=True)
    st.markdown(f"Chose <span class='chip now'>{html.escape(step.token)}</span> with probability "
                f"**{step.prob:.3f}**; entropy {step.entropy:.2f} nats; runner-up "
                f"<span class='chip'>{html.escape(step.runner_up[0])}</span> ({step.runner_up[1]:.3f}).",
                unsafe_allow_html=True)
    c1, c2 = st.columns([2, 3])
    with c1:
        st.plotly_chart(viz.candidates_bar(list(step.top), step.token, title="Top candidates for this step"),
                        key="trace_top")
        st.plotly_chart(viz.heads_at_step(result.decoder_attentions[:, :, t, :t + 1], result.tgt_tokens[:t + 1],
                                          title="Decoder self-attention at this step"), key="trace_self")
    with c2:
        st.plotly_chart(viz.heads_at_step(result.cross_attentions[:, :, t, :], result.src_tokens,
                                          key_unknown=result.src_unknown,
                                          title="Cross-attention at this step: where each head read the source"),
                        key="trace_cross")
    what_if(result, t)
    st.markdown("**All steps**")
    st.dataframe(viz.steps_table(result.steps), hide_index=True)


def what_if(result, t: int):
    """Pick another candidate at this step and let greedy decoding go on from it."""
    step = result.steps[t]
    alternatives = [tok for tok, _ in step.top if tok != step.token]
    choice = st.selectbox(f"What if step {t + 1} had said…", ["(the model's choice)", *alternatives], key="what_if")
    if choice not in alternatives:
        return
    alt = translate(checkpoint, result.source, "", t, choice)
    st.markdown(f"**What-if translation** (step {t + 1} forced to “{html.escape(choice)}”, greedy after): " +
                diff_chips(viz.token_diff([s.token for s in result.steps], [s.token for s in alt.steps])),
                unsafe_allow_html=True)
    st.caption(f"CLI: python -m model.translate --force {t}:{choice}   (steps count from 0 there)")
    if t + 1 < min(len(alt.steps), len(result.steps)):
        c1, c2 = st.columns(2)
        c1.plotly_chart(viz.heads_at_step(result.cross_attentions[:, :, t + 1], result.src_tokens,
                                          title=f"Original: cross-attention at step {t + 2}"), key="whatif_orig")
        c2.plotly_chart(viz.heads_at_step(alt.cross_attentions[:, :, t + 1], alt.src_tokens,
                                          title=f"What-if: cross-attention at step {t + 2}"), key="whatif_alt")


@st.fragment
def positions_view(tables: dict, result):
    st.caption("The model adds a position vector to every token embedding: ours are learned (one row per "
               "position), the paper's are fixed sinusoids. Orange marks the positions this sentence uses.")
    P, D = tables["source"].shape
    choices = {"learned, source (encoder)": (tables["source"], len(result.src_tokens)),
               "learned, target (decoder)": (tables["target"], len(result.tgt_tokens)),
               "sinusoidal (the paper)": (viz.sinusoidal(P, D), len(result.src_tokens))}
    which = st.segmented_control("Table", list(choices), key="pos_table", default=list(choices)[0], required=True)
    table, used = choices[which]
    c1, c2 = st.columns(2)
    c1.plotly_chart(viz.position_heatmap(table, used, title=f"{which}: positions × dimensions"), key="pos_map")
    c2.plotly_chart(viz.similarity_heatmap(table, used, title="Cosine similarity between positions"),
                    key="pos_sim")
    dims = st.multiselect("Dimensions to draw", list(range(D)), default=[0, 1, 8, 64, 128], key="pos_dims")
    if dims:
        st.plotly_chart(viz.dimension_curves(table, dims, used, title="Dimensions over position"), key="pos_curves")


@st.fragment
def ablation_view(result):
    st.caption("Switch heads off for this request only (their output is zeroed; the shared model is never edited) "
               "and see what the translation loses.")
    cfg = translator.cfg
    chosen = []
    for col, (kind, label) in zip(st.columns(3), KIND_VIEWS.items()):
        n = cfg.n_enc_layers if kind == "enc" else cfg.n_dec_layers
        options = [f"{kind}.{i}" for i in range(n)] + [f"{kind}.{i}.{h}" for i in range(n) for h in range(cfg.n_heads)]
        chosen += col.multiselect(label, options, key=f"ablate_{kind}", format_func=head_label,
                                  placeholder="heads to switch off")
    if not chosen:
        st.info("Pick heads (or whole layers) to switch off.")
        return
    spec = ",".join(chosen)
    ablated = translate(checkpoint, result.source, spec)
    st.markdown("**Original:** " + html.escape(result.text), unsafe_allow_html=True)
    st.markdown("**Without those heads:** " + diff_chips(viz.token_diff(result.output_tokens, ablated.output_tokens)),
                unsafe_allow_html=True)
    st.caption(f"CLI: python -m model.translate --mask-heads {spec}")
    tokens = tuple(s.token for s in result.steps)
    after = analyze(checkpoint, result.source, tokens, spec)
    st.plotly_chart(viz.probability_change(list(tokens), [s.prob for s in result.steps], [s.prob for s in after.steps],
                                           title="Probability of each originally chosen token, with and without "
                                                 "those heads"), key="ablate_probs")


def open_head():
    kind, layer, head = st.session_state.importance_pick.split(".")
    field = ATTENTION[KIND_VIEWS[kind]][0]
    st.session_state[f"{field}_layer"], st.session_state[f"{field}_head"] = int(layer), int(head)
    st.session_state.view = KIND_VIEWS[kind]


@st.fragment
def importance_view():
    table = head_importance(checkpoint)
    if table is None:
        st.info("No head-importance table next to this checkpoint. Compute it with `python -m model.head_importance "
                "--src test_2016_flickr.de.gz --ref test_2016_flickr.en.gz`.")
        return
    base = table["baseline"]
    st.caption(f"For every head: how much test BLEU drops (and loss rises) when only that head is switched off "
               f"(Michel et al., 2019). Baseline on {table['data']['n']} test sentences: BLEU {base['bleu']:.2f}, "
               f"loss {base['loss']:.3f}. Red = the model needs this head.")
    ranked = []
    for col, (kind, label) in zip(st.columns(3), KIND_VIEWS.items()):
        drop = base["bleu"] - np.array(table["kinds"][kind]["bleu"])
        col.plotly_chart(viz.importance_heatmap(drop, title=label), key=f"importance_{kind}")
        ranked += [(d, f"{kind}.{i}.{h}") for (i, h), d in np.ndenumerate(drop)]
    ranked.sort(reverse=True)
    drops = {k: d for d, k in ranked}
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    c1.selectbox("Look at a head (most important first)", list(drops), key="importance_pick",
                 format_func=lambda k: f"{KIND_VIEWS[k.split('.')[0]]}, {head_label(k)}: BLEU −{drops[k]:.2f}")
    c2.button("Open in its view", on_click=open_head)


@st.fragment
def reference_view(result):
    ref = st.text_input("English reference (the examples come with theirs)", key="reference")
    if not ref.strip():
        st.info("Type an English reference translation to see how likely the model finds each of its words.")
        return
    try:
        forced, loss = score_reference(checkpoint, result.source, ref)
    except InputError as e:
        st.warning(f"{e}.")
        return
    c1, c2, c3 = st.columns(3)
    c1.metric("Sentence BLEU of the model's output", f"{sentence_bleu(result.output_tokens, ref):.1f}")
    c2.metric("Loss per reference token", f"{loss:.3f}")
    c3.metric("Perplexity", f"{np.exp(loss):.2f}")
    st.caption("Teacher forcing: the decoder is fed the reference, and at each step we read the probability the "
               "model gave the reference's next token.")
    st.dataframe(viz.steps_table(forced.steps).rename(columns={"token": "reference token"}), hide_index=True)
    layer = st.selectbox("Layer", range(translator.cfg.n_dec_layers), format_func=lambda i: f"layer {i + 1}",
                         key="reference_layer")
    c1, c2 = st.columns(2)
    c1.plotly_chart(viz.attention_heatmap(viz.select_head(forced.cross_attentions, layer, None), forced.tgt_tokens,
                                          forced.src_tokens, title="Cross-attention, teacher-forced on the reference"),
                    key="reference_forced")
    c2.plotly_chart(viz.attention_heatmap(viz.select_head(result.cross_attentions, layer, None), result.tgt_tokens,
                                          result.src_tokens, title="Cross-attention, the model's own output"),
                    key="reference_free")


@st.fragment
def beam_view(result):
    width = st.slider("Beam width", 1, 8, 4, key="beam_width")
    best, nbest, trace = beam(checkpoint, result.source, width)
    st.markdown(f"**Beam search (width {width}):** " +
                diff_chips(viz.token_diff(result.output_tokens, best.output_tokens)), unsafe_allow_html=True)
    st.caption("Struck through: only in the greedy output; green: only in the beam output. Hypotheses are ranked by "
               "log-probability divided by length^0.6. CLI: python -m model.translate --beam " + str(width))
    st.markdown("**n-best list**")
    st.dataframe([{"rank": i + 1, "hypothesis": " ".join(toks), "log-probability": round(sc, 3),
                   "normalised score": round(norm, 3)} for i, (toks, sc, norm) in enumerate(nbest)], hide_index=True)
    st.markdown("**The search, step by step** (kept: stays in the beam; finished: ended with <eos>; pruned: fell out)")
    st.dataframe(viz.beam_table(trace), hide_index=True)


# --- the page ----------------------------------------------------------------------------------

st.set_page_config(page_title="Inside a Transformer translator", page_icon="🔎", layout="wide")
st.markdown(CHIP_CSS, unsafe_allow_html=True)
st.title("Inside a Transformer translator")
st.caption("German → English with the small “Attention Is All You Need” model (3+3 layers, 8 heads) trained on "
           "Multi30k. Type a sentence and press Enter, then look at every head of every layer and step through "
           "the decoding.")

checkpoint = os.environ.get(CHECKPOINT_ENV)  # None: the shipped checkpoints/
try:
    translator = load_translator(checkpoint)
except CheckpointError as e:
    st.error(f"**The model could not be loaded.** {e}")
    st.stop()

with st.sidebar:
    cfg = translator.cfg
    st.markdown(f"**Model**: {cfg.n_enc_layers} encoder + {cfg.n_dec_layers} decoder layers, {cfg.n_heads} heads, "
                f"d_model {cfg.d_model}, {translator.model.n_params():,} parameters, {cfg.positions} positions "
                f"({cfg.max_positions}).")
    st.markdown(f"**Device**: {translator.device_name}")
    st.markdown("**Colours**: attention weights 0 (dark) to 1 (yellow) on one fixed scale; grey = masked "
                "future position; dashed orange = a word the model does not know (`<unk>`).")

ex = examples()
c1, c2 = st.columns([3, 2])
c2.selectbox("…or pick an example from the Multi30k test set", [""] + [e["de"] for e in ex], key="example",
             on_change=use_example, format_func=lambda s: s or "choose an example")
c1.text_input("German sentence (press Enter to translate)", key="sentence", max_chars=2000,
              placeholder="Ein Hund rennt durch den Schnee.")
sentence = st.session_state.get("sentence", "")

if not sentence.strip():
    st.info("Type a German sentence above and press Enter, or pick an example. Try: "
            "*Zwei Männer spielen Fußball auf einer Wiese.*")
    st.stop()

try:
    result = translate(checkpoint, sentence)  # greedy, no intervention
except InputError as e:
    st.warning(f"{e}.")
    st.stop()
except Exception as e:  # the page never shows a traceback
    st.error(f"Translating this sentence failed ({type(e).__name__}). Try another sentence.")
    st.stop()

if result.truncated:
    st.warning(f"The sentence is too long for the model's {translator.cfg.max_positions} positions: the last "
               f"{result.truncated} tokens were cut, and the rest was translated.")
st.markdown(f"**Translation**<div class='translation'>{html.escape(' '.join(result.output_tokens)) or '(empty)'}"
            "</div>", unsafe_allow_html=True)
reference = next((e["en"] for e in ex if e["de"] == sentence), None)
if reference:
    st.caption(f"Multi30k reference: {reference}")
st.markdown("Source tokens: " + token_chips(result.src_tokens, result.src_unknown), unsafe_allow_html=True)
st.markdown("Output tokens: " + token_chips([s.token for s in result.steps]),
            unsafe_allow_html=True)
if any(result.src_unknown):
    st.caption(f"{sum(result.src_unknown)} source word(s) are unknown to the model (dashed): it reads each as "
               "<unk> and still translates the sentence.")
if sum(any(c.isalnum() for c in t) for t in result.src_tokens[1:-1]) <= 2:
    st.caption("The model learned from Multi30k, which holds only whole image descriptions: given one or two "
               "words it tends to invent a scene around them. Full sentences show it at its best.")

view = st.segmented_control("View", VIEWS, key="view", default=VIEWS[0], required=True)
if view in ATTENTION:
    attention_view(result, view)
elif view == "Decoding trace":
    trace_view(result)
elif view == "Positional encodings":
    positions_view(position_tables(checkpoint), result)
elif view == "Ablate heads":
    ablation_view(result)
elif view == "Head importance":
    importance_view()
elif view == "Reference":
    reference_view(result)
else:
    beam_view(result)
