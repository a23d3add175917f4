"""nlmcodec.explain: where the bits go, token by token, from the same coding path as compress (issue 14).

Owns explain() (per-token records), the self-contained HTML page (render_html) and the xz -9e reference
curve.  How the records are made: the input is run through the real frame encoder (_encode.FrameEncoder,
one thread, CRC32, the same model and mode as compress) with a codec whose per-token trace is on
(nlm_codec_trace, csrc/nlm.h).  The encoder's policy is untouched: a probe or a block it rolls back
(restore()) is dropped, and a group it finally codes as lzma keeps none of its attempts, so the records
of each word-model block are exactly the symbols of that block's payload in the frame, and the frame
explain() builds is byte-identical to compress() (tests/test_explain.py checks both).

Blocks the encoder codes with the byte model, lzma or stored carry no per-token model bits.  Their tokens
(cut by the same lexer on the same 64 KiB block pieces) get coder "byte" / "lzma" / "stored" and an equal
share per byte of
that block's payload (8 * payload bytes / block bytes each), so every token has a cost and the sums per
block are the payload bits; the page shows them greyed.  Frame header, block headers and the trailer
(index, size, CRC) are reported separately as overhead_bytes.
"""
from __future__ import annotations

import codecs
import html
import json
import lzma
from collections import namedtuple

from . import _encode, _frame
from ._core import TRACE_PARTS, lex_tokens

KINDS = ("end", "word", "number", "symbol")
XZ_PRESET = 9 | lzma.PRESET_EXTREME
XZ_POINTS = 32                # offsets of the cumulative curve
XZ_PREFIX_MAX = 4 << 20       # up to this size the xz curve compresses prefixes; above, 32 chunks (summed)
PAGE_TOKENS = 4000            # tokens drawn at a time on the page (paged with buttons)
MAX_PAGE_TOKENS = 100_000     # tokens embedded in the page at most; the summary always covers the file

Token = namedtuple("Token", "offset bytes kind coder bits total top block")
Token.__doc__ = """One token: offset (bytes into the input), bytes (gap then body), kind ("word", "number",
"symbol", "end"), coder ("model", "byte", "lzma", "stored"), bits ({part: bits}; parts TRACE_PARTS for the
model, {"byte": b}, {"lzma": b} or {"stored": b} for a token's share of a plain block), total (bits), top (model tokens: up to
3 (word, p) of the coded class, p = p(class) * p(word | class); () otherwise), block (index into
Explanation.blocks; a block's END token may be empty and sit at the block's end offset)."""

Block = namedtuple("Block", "offset size kind payload_size token_bits")
Block.__doc__ = """One block of the frame: offset, size (input bytes), kind ("model", "byte", "lzma", "stored"),
payload_size (bytes), token_bits (sum of its tokens' bits; for a model block 8 * payload_size minus the
range coder's rounding and flush)."""


class Explanation:
    """What explain() returns: tokens (list of Token), blocks (list of Block), frame_size (bytes of the
    frame compress() writes for the same input, model and mode), overhead_bytes (frame bytes outside the
    block payloads), adapt, model_name, size (input bytes).  by_part() sums the bits per category."""

    def __init__(self, data, adapt, model_name, tokens, blocks, frame_size):
        self.data, self.adapt, self.model_name = data, adapt, model_name
        self.tokens, self.blocks, self.frame_size = tokens, blocks, frame_size
        self.size = len(data)
        self.overhead_bytes = frame_size - sum(b.payload_size for b in blocks)

    def __len__(self):
        return len(self.tokens)

    def __iter__(self):
        return iter(self.tokens)

    def __getitem__(self, i):
        return self.tokens[i]

    @property
    def total_bits(self) -> float:
        return sum(t.total for t in self.tokens)

    def by_part(self) -> dict:
        """{category: bits} over the whole input: TRACE_PARTS, then "lzma" and "stored" shares."""
        out = {p: 0.0 for p in TRACE_PARTS + ("byte", "lzma", "stored")}
        for t in self.tokens:
            for k, v in t.bits.items():
                out[k] += v
        return out

    def __repr__(self):
        mode = {False: "static", True: "dynamic"}.get(self.adapt, self.adapt)
        return (f"<Explanation {mode} {self.model_name!r}: {self.size} bytes, "
                f"{len(self.tokens)} tokens, frame {self.frame_size} bytes>")


class _TracingCodec:
    """A _core.Codec seen by the encoder, recording the trace of every encode_block it keeps.

    calls: {input offset of the block: (block size, payload size, trace records)}; an encode_block
    followed by restore() (a probe, or a block the encoder rolled back) is forgotten."""

    def __init__(self, codec):
        self._c = codec
        self.adapt = codec.adapt      # the mode (encode_group resets the codec with its schedule)
        self._c.trace(True)
        self.enc = None               # the FrameEncoder (its progress = offset of the block being coded)
        self.calls = {}
        self._last = None

    def reset(self, **options):
        self._c.reset(**options)

    def save(self):
        self._c.save()
        self._last = None

    def set_frozen(self, on):
        self._c.set_frozen(on)

    def restore(self):
        self._c.restore()
        if self._last is not None:
            if self.calls.get(self._last[0]) is self._last[1]:
                del self.calls[self._last[0]]
            self._last = None

    def encode_block(self, block):
        payload = self._c.encode_block(block)
        entry = (len(block), len(payload), self._c.trace_records().copy())
        pos = self.enc.progress
        self.calls[pos] = entry
        self._last = (pos, entry)
        return payload


def _pieces_of(raw):
    """(offset, length) of the encoder's blocks: GROUP_SIZE groups, then the word model's blocks."""
    for g, gl in _encode._pieces(raw, _encode.GROUP_SIZE):
        for b, bl in _encode._model_pieces(raw[g:g + gl]):
            yield g + b, bl


def explain(data, *, model=None, adapt=_frame.DEFAULT_ADAPT) -> Explanation:
    """Per-token costs of compressing data with model (None: the bundled default) in the given mode.

    Runs the real encoder (one thread, CRC32) with the core's per-token trace on; see the module
    docstring for what blocks coded as lzma or stored report."""
    from ._core import Codec
    from ._registry import resolve

    data = bytes(memoryview(data).cast("B"))
    m = resolve(model)
    adapt = _frame.adapt_mode(adapt)
    tc = _TracingCodec(Codec(m, adapt))
    enc = _encode.FrameEncoder(lambda: tc, None, m.model_id, adapt, _frame.CHECK_CRC32, 1)
    tc.enc = enc
    frame = enc.feed(data) + enc.finish()
    info = _frame.get_frame_info(frame)
    vocab = m.vocab

    def word(i):
        return "<unk>" if i == 0 else "<end>" if i == 1 else vocab[i].decode("utf-8", "replace")

    tokens, blocks = [], []
    pieces = list(_pieces_of(data))
    pos = 0
    for b in info.blocks:
        if b.kind == "model":
            size, psize, recs = tc.calls[pos]
            if size != b.size or psize != b.compressed_size:      # pragma: no cover - an encoder change
                raise AssertionError(f"trace of the block at {pos} does not match the frame")
            bits_sum = 0.0
            for r in recs:
                parts = {p: float(v) for p, v in zip(TRACE_PARTS, r["bits"]) if v}
                tot = float(r["bits"].sum())
                bits_sum += tot
                top = tuple((word(int(i)), float(p)) for i, p in zip(r["top_id"], r["top_p"]) if i >= 0)
                off = pos + int(r["off"])
                tokens.append(Token(off, data[off:off + int(r["len"])], KINDS[r["kind"]], "model", parts, tot, top,
                                    len(blocks)))
        else:
            share = 8.0 * b.compressed_size / b.size if b.size else 0.0
            bits_sum = 8.0 * b.compressed_size
            for p, k in pieces:
                if p < pos or p >= pos + b.size:
                    continue
                for t in lex_tokens(data[p:p + k]):
                    off = p + int(t["gap_off"])
                    n = int(t["off"]) + int(t["len"]) - int(t["gap_off"])
                    tokens.append(Token(off, data[off:off + n], KINDS[t["kind"]], b.kind, {b.kind: share * n},
                                        share * n, (), len(blocks)))
        blocks.append(Block(pos, b.size, b.kind, b.compressed_size, bits_sum))
        pos += b.size
    return Explanation(data, adapt, m.name or "", tokens, blocks, len(frame))


# ---------------------------------------------------------------------------------------------- page

def xz_curve(data, points=XZ_POINTS):
    """[(offset, bytes of xz -9e up to offset)] at `points` evenly spaced offsets (prefixes up to
    XZ_PREFIX_MAX bytes; above, each chunk compressed on its own and the sizes summed)."""
    n = len(data)
    offs = sorted({max(1, n * i // points) for i in range(1, points + 1)}) if n else []
    if n <= XZ_PREFIX_MAX:
        return [(o, len(lzma.compress(data[:o], preset=XZ_PRESET))) for o in offs]
    out, acc, prev = [], 0, 0
    for o in offs:
        acc += len(lzma.compress(data[prev:o], preset=XZ_PRESET))
        out.append((o, acc))
        prev = o
    return out


def _cum_at(exp, offs):
    """Cumulative token bits at each offset (tokens that end at or before it)."""
    out, acc, i, toks = [], 0.0, 0, exp.tokens
    for o in offs:
        while i < len(toks) and toks[i].offset + len(toks[i].bytes) <= o:
            acc += toks[i].total
            i += 1
        out.append(acc)
    return out


def _svg_curve(curves, n):
    """Inline SVG: cumulative kilobytes along the file.  curves: [(label, colour, [(offset, bytes)])]."""
    W, H, L, B, R = 640, 260, 56, 30, 24        # size, left/bottom/right margins (px)
    ymax = max([v for _, _, pts in curves for _, v in pts] + [1])
    xs = lambda o: L + (W - L - R) * o / max(n, 1)
    ys = lambda v: H - B - (H - B - 10) * v / ymax
    out = [f'<svg id="curve" xmlns="http://www.w3.org/2000/svg" width="100%" '
           f'viewBox="0 0 {W} {H}" role="img" aria-label="cumulative compressed size">',
           f'<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="#444"/>',
           f'<line x1="{L}" y1="10" x2="{L}" y2="{H - B}" stroke="#444"/>']
    for k in range(5):
        v = ymax * k / 4
        out.append(f'<text x="{L - 4}" y="{ys(v) + 4:.1f}" font-size="10" text-anchor="end">{v / 1024:.1f}K</text>')
        o = n * k / 4
        out.append(f'<text x="{xs(o):.1f}" y="{H - B + 14}" font-size="10" text-anchor="middle">{o / 1024:.0f}K</text>')
    out.append(f'<text x="{(W + L) / 2}" y="{H - 2}" font-size="11" text-anchor="middle">input offset (bytes)</text>')
    for j, (label, colour, pts) in enumerate(curves):
        path = " ".join(f"{xs(o):.1f},{ys(v):.1f}" for o, v in [(0, 0)] + list(pts))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        out.append(f'<rect x="{L + 10}" y="{14 + 16 * j}" width="12" height="4" fill="{colour}"/>'
                   f'<text x="{L + 28}" y="{20 + 16 * j}" font-size="11">{html.escape(label)}</text>')
    out.append("</svg>")
    return "".join(out)


def _token_texts(tokens):
    """Display text of each token: an incremental UTF-8 decode, so a character split across tokens is shown
    in the token where it completes and the concatenation is the decoded input."""
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return [dec.decode(t.bytes) for t in tokens]


def render_html(data, name, explanations, xz=None) -> str:
    """The self-contained page (inline CSS/JS/SVG, no network) for explanations of one input: a list of
    Explanation (static and/or dynamic, same data).  xz: xz_curve(data) or None to compute it."""
    if xz is None:
        xz = xz_curve(data)
    n = len(data)
    offs = [o for o, _ in xz]
    modes = []
    curves = [("xz -9e", "#777", xz)]
    colours = {False: "#1f77b4", True: "#d62728", "heads": "#2ca02c"}
    summary_rows = []
    for e in explanations:
        label = {False: "static", True: "dynamic", "heads": "heads"}[e.adapt]
        shown = e.tokens[:MAX_PAGE_TOKENS]
        parts = e.by_part()
        modes.append({
            "label": label,
            "frame": e.frame_size,
            # per token: [len, kind, coder, total, [bits by part], [[word, p], ...]]
            "tok": [[len(t.bytes), KINDS.index(t.kind), ("model", "byte", "lzma", "stored").index(t.coder),
                     round(t.total, 3), [round(t.bits.get(p, 0.0), 3) for p in TRACE_PARTS],
                     [[w, round(p, 4)] for w, p in t.top]] for t in shown],
        })
        cum = _cum_at(e, offs)
        curves.append((f"nlmcodec {label} (token bits)", colours[e.adapt], [(o, c / 8) for o, c in zip(offs, cum)]))
        tot = sum(parts.values()) or 1.0
        summary_rows.append((label, e, parts, tot))
    texts = _token_texts(explanations[0].tokens[:MAX_PAGE_TOKENS]) if explanations else []
    ntok = len(explanations[0].tokens) if explanations else 0
    # the summary table: bits by category, both modes
    cats = [p for p in TRACE_PARTS + ("byte", "lzma", "stored") if any(r[2][p] for r in summary_rows)]
    head = "".join(f"<th>{html.escape(r[0])}</th>" for r in summary_rows)
    rows = []
    for c in cats:
        cells = "".join(f"<td>{r[2][c] / 8:,.0f} B ({100 * r[2][c] / r[3]:.1f}%)</td>" for r in summary_rows)
        rows.append(f"<tr><th>{c}</th>{cells}</tr>")
    rows.append("<tr><th>overhead (headers, index, CRC)</th>" +
                "".join(f"<td>{r[1].overhead_bytes:,} B</td>" for r in summary_rows) + "</tr>")
    rows.append("<tr><th>frame</th>" + "".join(
        f"<td><b>{r[1].frame_size:,} B</b> ({8 * r[1].frame_size / max(n, 1):.3f} bpb)</td>" for r in summary_rows)
        + "</tr>")
    xz_total = xz[-1][1] if xz else 0
    rows.append(f"<tr><th>xz -9e</th><td colspan='{len(summary_rows)}'>{xz_total:,} B "
                f"({8 * xz_total / max(n, 1):.3f} bpb)</td></tr>")
    limit = ""
    if ntok > MAX_PAGE_TOKENS:
        limit = (f"<p class='note'>The text shows the first {MAX_PAGE_TOKENS:,} of {ntok:,} tokens; the summary "
                 f"and the curve cover the whole file.</p>")
    payload = {"texts": texts, "modes": modes, "parts": list(TRACE_PARTS), "page": PAGE_TOKENS,
               "kinds": list(KINDS), "coders": ["model", "byte", "lzma", "stored"]}
    blob = json.dumps(payload, ensure_ascii=True, separators=(",", ":")).replace("</", "<\\/")
    title = html.escape(f"nlmcodec --explain {name}")
    return _PAGE.format(title=title, name=html.escape(name), size=f"{n:,}", ntok=f"{ntok:,}",
                        model=html.escape(explanations[0].model_name if explanations else ""),
                        table=f"<table><tr><th>bits by category</th>{head}</tr>{''.join(rows)}</table>",
                        svg=_svg_curve(curves, n), limit=limit, data=blob)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body{{font:14px/1.4 system-ui,sans-serif;margin:0;color:#111;background:#fafafa}}
header{{padding:8px 16px;background:#222;color:#eee}} header b{{color:#fff}}
#wrap{{display:flex;gap:16px;padding:12px 16px}} #left{{flex:1;min-width:0}}
#right{{width:440px;flex:none;position:sticky;top:8px;align-self:flex-start}}
#text{{font:13px/1.55 ui-monospace,monospace;white-space:pre-wrap;word-wrap:break-word;background:#fff;
border:1px solid #ccc;padding:10px}}
#text span.t{{cursor:pointer}} #text span.sel{{outline:2px solid #000}} #text span.plain{{opacity:.55}}
#info{{background:#fff;border:1px solid #ccc;padding:8px;min-height:150px;font-size:12px}}
#info table td,#info table th{{padding:0 6px 0 0;text-align:left}}
table{{border-collapse:collapse}} td,th{{padding:2px 8px;text-align:right;border-bottom:1px solid #eee}}
th:first-child{{text-align:left}} .note{{color:#555;font-size:12px}}
#legend{{display:flex;align-items:center;gap:6px;font-size:12px;margin:6px 0}}
#grad{{width:220px;height:12px;border:1px solid #999}} button{{margin-right:4px}}
button.on{{background:#333;color:#fff}}
</style></head><body>
<header><b>{name}</b>: {size} bytes, {ntok} tokens, model <b>{model}</b> &mdash; nlmcodec --explain</header>
<div id="wrap"><div id="left">
<div>mode: <span id="modes"></span> &nbsp; page: <button id="prev">&larr;</button><span id="pageno"></span>
<button id="next">&rarr;</button></div>
<div id="legend">bits per byte: 0 <canvas id="grad" width="220" height="12"></canvas> 8+ &nbsp;
<span class="note">(greyed: bytes coded by the byte model, lzma or stored, their block's cost shared per byte)</span></div>
{limit}<div id="text"></div></div>
<div id="right"><div id="info"><i>hover or click a token</i></div>
<h3>Summary (whole file)</h3>{table}
<h3>Cumulative size along the file</h3>{svg}
<p class="note">Token bits are &minus;log2 of the quantised probabilities the range coder used (the payload
is this plus the coder's flush); xz -9e is the size of each prefix compressed with preset 9e.</p></div></div>
<script id="data" type="application/json">{data}</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
let mode = D.modes.length - 1, page = 0, pinned = -1;
const npages = Math.max(1, Math.ceil(D.texts.length / D.page));
function colour(bpb) {{
  const x = Math.min(bpb, 8) / 8;                  // 0 green .. 0.5 yellow .. 1 red/purple
  const hue = 130 - 130 * Math.min(x * 1.6, 1) - (x > 0.62 ? 60 * (x - 0.62) / 0.38 : 0);
  return "hsl(" + ((hue + 360) % 360).toFixed(0) + ",85%," + (88 - 30 * x).toFixed(0) + "%)";
}}
function fmt(v) {{ return v.toFixed(2); }}
function esc(s) {{ return s.replace(/[&<>]/g, c => ({{"&": "&amp;", "<": "&lt;", ">": "&gt;"}})[c]); }}
function show(i) {{
  const m = D.modes[mode], t = m.tok[i];
  let h = "<b>" + m.label + "</b> token " + i + ": <code>" + esc(JSON.stringify(D.texts[i])) + "</code><br>" +
    D.kinds[t[1]] + ", coded by " + D.coders[t[2]] + ", " + t[0] + " bytes, <b>" + fmt(t[3]) + " bits</b> (" +
    (t[0] ? fmt(t[3] / t[0]) : "-") + " bits/byte)<table>";
  if (t[2] === 0) D.parts.forEach((p, k) => {{ if (t[4][k]) h += "<tr><td>" + p + "</td><td>" + fmt(t[4][k]) + "</td></tr>"; }});
  h += "</table>";
  if (t[5].length) h += "top predictions (of the coded class):<table>" +
    t[5].map(w => "<tr><td><code>" + esc(w[0]) + "</code></td><td>" + (100 * w[1]).toFixed(2) + "%</td></tr>").join("") + "</table>";
  document.getElementById("info").innerHTML = h;
}}
function paint() {{
  const m = D.modes[mode];
  document.querySelectorAll("#text span.t").forEach(s => {{
    const t = m.tok[+s.dataset.i];
    s.style.background = t[0] ? colour(t[3] / t[0]) : "";
    s.classList.toggle("plain", t[2] !== 0);
  }});
  document.querySelectorAll("#modes button").forEach((b, k) => b.classList.toggle("on", k === mode));
}}
function draw() {{
  const box = document.getElementById("text"), f = document.createDocumentFragment();
  box.textContent = "";
  const a = page * D.page, b = Math.min(D.texts.length, a + D.page);
  for (let i = a; i < b; i++) {{
    const s = document.createElement("span");
    s.className = "t"; s.dataset.i = i; s.textContent = D.texts[i];
    f.appendChild(s);
  }}
  box.appendChild(f);
  document.getElementById("pageno").textContent = " " + (page + 1) + " / " + npages + " ";
  paint();
}}
D.modes.forEach((m, k) => {{
  const b = document.createElement("button");
  b.textContent = m.label + " (" + m.frame.toLocaleString() + " B)";
  b.onclick = () => {{ mode = k; paint(); if (pinned >= 0) show(pinned); }};
  document.getElementById("modes").appendChild(b);
}});
const box = document.getElementById("text");
box.addEventListener("mouseover", e => {{ if (pinned < 0 && e.target.dataset.i) show(+e.target.dataset.i); }});
box.addEventListener("click", e => {{
  if (!e.target.dataset.i) return;
  document.querySelectorAll("#text span.sel").forEach(s => s.classList.remove("sel"));
  const i = +e.target.dataset.i;
  if (pinned === i) {{ pinned = -1; return; }}
  pinned = i; e.target.classList.add("sel"); show(i);
}});
document.getElementById("prev").onclick = () => {{ if (page > 0) {{ page--; draw(); }} }};
document.getElementById("next").onclick = () => {{ if (page < npages - 1) {{ page++; draw(); }} }};
const g = document.getElementById("grad").getContext("2d");
for (let x = 0; x < 220; x++) {{ g.fillStyle = colour(8 * x / 219); g.fillRect(x, 0, 1, 12); }}
draw();
const hm = /tok=(\\d+)/.exec(location.hash);      // #tok=N: open on token N with its record pinned
if (hm && +hm[1] < D.texts.length) {{
  page = Math.floor(+hm[1] / D.page); draw(); pinned = +hm[1];
  const s = document.querySelector('#text span[data-i="' + pinned + '"]');
  if (s) {{ s.classList.add("sel"); if (s.getBoundingClientRect().bottom > innerHeight) s.scrollIntoView({{block: "center"}}); }}
  show(pinned);
}}
</script></body></html>
"""
