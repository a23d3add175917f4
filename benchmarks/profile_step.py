"""Instructions per token of the C token step, by stage, under callgrind (issue 11's profile command).

    python benchmarks/profile_step.py [--file alice29.txt] [--bytes 40960] [--modes static dynamic heads]
                                      [--simd-cap N] [--out benchmarks/profile_step.md --label before]

Owns the stage map of the C core: every source line of csrc/ belongs to the C function that encloses it
(so inlined static functions keep their own name), and each function belongs to one stage (STAGES below).
Shared helpers (the exp kernels, the SIMD-level query, libc/libm: memcpy, memset, log2) are charged to the
stage of the line that called them.  One child process per mode builds a codec from the default model and
encodes the first --bytes of the file as one block; callgrind collects only inside nlm_encode_block (model
loading and Python are not counted).  Instruction counts (Ir) are the figure: they do not depend on the
load of a shared machine.  Needs valgrind (apt-get install -y valgrind); exits 2 when it cannot run.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")

# stage of each C function (by source name); "*" = charged to the caller's stage
STAGES = {
    "lexer": {"lex.c": "*all"},
    "forward matvecs": {"kern.c": ["kern_dot", "kern_matvec", "kern_matvec_h", "matvec_scalar", "matvec_sse2",
                                   "matvec_avx2", "matvec_h_f16c", "matvec_avx512", "matvec_h_avx512",
                                   "avx_reduce16", "sse_reduce16", "avx512_reduce16", "kern_half_to_float"],
                        "kern_q8.c": ["kern_matvec_q8", "matvec_q8_scalar", "matvec_q8_avx2", "matvec_q8_vnni",
                                      "dp_row", "hsum8_epi32", "rescale", "have_vnni", "finish4", "finish4_avx2"],
                        "body.h": ["body_matvec_x", "body_matvec_h"]},
    "integer grids (format 11: h and x per token; Wo's rows once per class)": {
        "kern_q8.c": ["kern_quant_act", "kern_quant_vec", "kern_quant_row", "rne", "clamp127", "grid", "grid_avx2",
                      "quant_act_avx512", "rne_clamp8", "rne_clamp16", "pack16", "bytes16", "amax_avx2",
                      "row_amax_avx512", "quant_row_avx2", "quant_row_avx512", "grid_level", "simd_amax",
                      "simd_quant_row", "simd_grid"],
        "lm.c": ["q8_act", "q8_class", "q8_rows"]},
    "forward glue (bias adds, embedding sum, pre-activation)": {
        "lm.c": ["class_logits", "word_logits", "case_logits", "gap_logits", "lm_class_logits",
                 "lm_word_logits", "lm_case_logits", "lm_gap_logits", "input_vec", "lm_advance", "body_tensors",
                 "invalidate", "lm_class_of", "lm_class_start", "lm_hidden", "dense", "theta0", "e_row",
                 "bcase_row", "bgap_row"],
        "elman.c": ["step"],
        "kern.c": ["kern_add", "kern_add3", "add_scalar", "add3_scalar", "add_avx2", "add3_avx2", "add_avx512",
                   "add3_avx512"]},
    "forward tanh": {"kern_math.c": ["kern_tanh", "kern_tanh_vec", "tanh_sse2", "tanh_avx2", "tanh_vec_avx2",
                                     "tanh_avx512", "tanh_vec_avx512"]},
    "quantiser + exp": {"quant.c": "*all",
                        "kern_math.c": ["kern_quant_max", "quant_max_scalar", "kern_exp_u40", "exp_u40_scalar",
                                        "exp_u40_sse2", "exp_u40_avx2", "exp_u40_avx512", "kern_u40_scale",
                                        "u40_scale_scalar", "u40_scale_sse2", "u40_scale_avx2",
                                        "u40_scale_avx512", "scale_u40"],
                        "kern.h": ["kern_to_u40"]},
    "range coder": {"rc.c": "*all"},
    "speller, cache, gap blending": {"speller.c": "*all", "gapmix.c": "*all", "cm.c": "*all"},
    "token experts (match model, token cache, body mixer)": {"tokmatch.c": "*all", "tokcache.c": "*all",
                                                             "bodymix.c": "*all"},
    "step glue (codec.c, fp env, stats)": {"codec.c": "*all", "fpenv.h": "*all"},
    "backward": {"lm.c": ["backward", "touch", "end_segment", "lm_end_segment", "input_backward", "body_grads",
                          "mat_e", "mat_b", "mat_c", "theta0_into", "segment_easy"],
                 "elman.c": ["bwd_begin", "bwd_token", "bwd_finish"],
                 "kern.c": ["kern_matvec_t_acc", "matvec_t_acc_avx2", "matvec_t_acc_avx512", "kern_outer_acc",
                            "kern_outer_acc_seq", "outer_acc_seq_scalar", "outer_acc_seq_avx2",
                            "outer_acc_seq_avx512", "kern_axpy", "axpy_scalar", "axpy_avx2", "axpy_avx512",
                            "kern_head_backward"],
                 "kern_math.c": ["kern_softmax_xent", "kern_softmax_e", "softmax_finish", "softmax_max_scalar",
                                 "exp_sub_vec", "exp_sub_avx2", "exp_sub_avx512", "div_avx2", "div_avx512"]},
    "update": {"lm.c": ["update", "update_rows"],
               "kern.c": ["kern_sgd_decay", "kern_decay_sgd", "kern_decay_toward", "sgd_decay_scalar",
                          "decay_sgd_scalar", "decay_toward_scalar", "sgd_decay_avx2", "decay_sgd_avx2",
                          "decay_toward_avx2", "sgd_decay_avx512", "decay_sgd_avx512", "decay_toward_avx512",
                          "clampf", "kern_sgd_decay_idx", "kern_sgd_decay_h", "kern_decay_sgd_h",
                          "sgd_decay_scalar_h", "decay_sgd_scalar_h", "sgd_decay_f16c", "decay_sgd_f16c",
                          "sgd_decay_avx512_h", "decay_sgd_avx512_h"]},
}
STAGE_ORDER = list(STAGES) + ["unattributed"]
INHERIT = {"kern_exp", "kern_exp_vec", "exp_sse2", "exp_avx2", "exp_vec_avx2", "exp_avx512", "exp_vec_avx512",
           "kern_simd_level", "kern_has_f16c", "kern_set_simd_cap", "simd_level_raw", "max_nonnan",
           "max_nonnan_sse2", "max_nonnan_avx2", "max_nonnan_avx512", "finite_f", "ld16",
           "kern_half_to_float_vec", "half_to_float_f16c", "kern_mix2_dot", "kern_mix2_train", "mix2_dot_scalar",
           "mix2_train_scalar", "mix2_dot_avx2", "mix2_train_avx2", "mix_delta_avx2", "kern_weigh_acc",
           "weigh_acc_scalar", "weigh_acc_avx2", "weigh_acc_avx512", "kern_sum_u32", "sum_u32_scalar", "sum_u32_avx2",
           "sum_u32_avx512"}

CHILD = r"""
import json, sys
import nlmcodec
from nlmcodec import _core, _bench
path, nbytes, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])   # 0 static, 1 dynamic, 2 heads
data = open(path, "rb").read()[:nbytes]
model = nlmcodec.load_model("default")
codec = _core.Codec(model, mode > 0)
if mode == 2:
    codec.reset(schedule=(0, 0, 0))   # heads mode (docs/format.md §6.5)
payload = codec.encode_block(data)
st = codec.stats()
print(json.dumps({"tokens": int(st["tokens"]), "in": len(data), "out": len(payload), "model": model.model_id.hex()[:16]}))
"""

MODE_CODE = {"static": 0, "dynamic": 1, "heads": 2}   # the child's mode argument

ATTR_RE = re.compile(r"__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)\s*")
FUNC_RE = re.compile(r"^(?:static\s+|inline\s+)*[A-Za-z_][\w\s\*]*?\b(\w+)\s*\(")


def source_functions(path):
    """Line -> name of the enclosing top-level function (definitions start at column 0; a declaration, whose
    text reaches ';' before '{', is not one).  Lines of a multi-line #define map to None (the compiler may
    charge expanded code to them; the caller then uses the function symbol)."""
    owner, cur, in_macro = {}, None, False
    with open(path, encoding="utf-8", errors="replace") as f:
        src = f.readlines()
    for no, line in enumerate(src, 1):
        if in_macro or line.startswith("#define"):
            in_macro = line.rstrip().endswith("\\")
            owner[no] = None
            continue
        if line[:1].isalpha() or line[:1] == "_":
            text = ATTR_RE.sub("", line)
            m = FUNC_RE.match(text)
            if m and not text.startswith(("typedef", "struct")):
                rest = "".join(src[no - 1:no + 8])
                brace, semi = rest.find("{"), rest.find(";")
                if brace >= 0 and (semi < 0 or brace < semi):
                    cur = m.group(1)
        owner[no] = cur
    return owner


def stage_map():
    by_file = defaultdict(dict)  # basename -> function -> stage
    whole = {}
    for stage, files in STAGES.items():
        for fname, funcs in files.items():
            if funcs == "*all":
                whole[fname] = stage
            else:
                for fn in funcs:
                    by_file[fname][fn] = stage
    return by_file, whole


class Profile:
    """Self costs per (file, line) and call costs per (call-site file, line, callee) of one callgrind.out."""

    def __init__(self, path):
        self.self_cost = defaultdict(int)   # (file, line, symbol, symbol's file) -> Ir
        self.calls = defaultdict(int)       # (file, line, symbol, callee) -> inclusive Ir
        self.total = 0
        names = {"fl": {}, "fn": {}}
        cur_file = fl = fn = None
        callee = None
        pending_call = False
        last = 0

        def name(kind, val):
            m = re.match(r"\((\d+)\)(?:\s+(.*))?$", val)
            if not m:
                return val
            table = names["fn" if kind in ("fn", "cfn") else "fl"]
            if m.group(2) is not None:
                table[m.group(1)] = m.group(2)
            return table.get(m.group(1), "?")

        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line:
                    continue
                c = line[0]
                if c.isdigit() or c in "+-*":
                    parts = line.split()
                    p = parts[0]
                    if p == "*":
                        pos = last
                    elif p[0] in "+-":
                        pos = last + int(p)
                    else:
                        pos = int(p)
                    last = pos
                    ir = int(parts[1]) if len(parts) > 1 else 0
                    if pending_call:
                        self.calls[(cur_file, pos, fn, callee)] += ir
                        pending_call = False
                    else:
                        self.self_cost[(cur_file, pos, fn, fl)] += ir
                        self.total += ir
                    continue
                key, _, val = line.partition("=")
                if key in ("fl",):
                    fl = cur_file = name("fl", val)
                elif key in ("fi", "fe"):
                    cur_file = name("fl", val)
                elif key == "fn":
                    fn = name("fn", val)
                    cur_file = fl
                elif key in ("cfl", "cfi"):
                    name("fl", val)
                elif key == "cfn":
                    callee = name("cfn", val)
                elif key == "calls":
                    pending_call = True
                    # the target position is absolute; it does not move the line counter


def attribute(prof, src_root=None):
    """Stage -> Ir, (file, function) -> Ir, and (file, line) -> Ir for the C core.  src_root: the csrc tree
    the profiled build was compiled from, when it is not the checkout's (a saved profile of older code)."""
    by_file, whole = stage_map()
    owners = {}

    def owner(path, line):
        if not path or not path.startswith(CSRC):
            return None, None
        base = os.path.basename(path)
        if path not in owners:
            real = os.path.join(src_root, os.path.relpath(path, CSRC)) if src_root else path
            owners[path] = source_functions(real) if os.path.exists(real) else {}
        return base, owners[path].get(line)

    def stage_of(base, func):
        if base is None or func in INHERIT:
            return None
        if base in whole:
            return whole[base]
        return by_file.get(base, {}).get(func, "unattributed")

    stages, funcs, lines = defaultdict(int), defaultdict(int), defaultdict(int)
    for (path, line, sym, sym_path), ir in prof.self_cost.items():
        base, func = owner(path, line)
        st = stage_of(base, func)
        sym = sym.split("'")[0].split(".")[0]
        if (base is None or func is None or func in INHERIT) and sym not in INHERIT and sym_path and sym_path.startswith(CSRC):
            # a shared helper or a compiler intrinsic (immintrin.h) inlined into a staged function
            st = stage_of(os.path.basename(sym_path), sym)
        if base is not None:
            funcs[(base, func)] += ir
            lines[(base, line)] += ir
        if st is not None:
            stages[st] += ir
    for (path, line, _sym, callee), ir in prof.calls.items():
        base, func = owner(path, line)
        st = stage_of(base, func)
        if st is None:
            continue
        callee_name = callee.split("'")[0].split(".")[0]
        if callee_name in INHERIT or not is_core_function(callee_name, by_file, whole):
            stages[st] += ir
    stages["unattributed"] += prof.total - sum(stages.values())
    return stages, funcs, lines


_CORE_NAMES = None


def is_core_function(name, by_file, whole):
    """True when name is a function defined in csrc/ (its cost is already counted as self cost)."""
    global _CORE_NAMES
    if _CORE_NAMES is None:
        _CORE_NAMES = set()
        for dirpath, _, files in os.walk(CSRC):
            for fname in files:
                if fname.endswith((".c", ".h")):
                    _CORE_NAMES.update(v for v in source_functions(os.path.join(dirpath, fname)).values() if v)
    return name in _CORE_NAMES


def run_mode(valgrind, path, nbytes, adapt, simd_cap, tmp, reuse=False):
    out = os.path.join(tmp, f"callgrind.{adapt}.out")
    if reuse and os.path.exists(out + ".json"):
        with open(out + ".json") as f:
            return json.load(f), Profile(out)
    env = dict(os.environ)
    if simd_cap is not None:
        env["NLMCODEC_SIMD_CAP"] = str(simd_cap)
    cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
           "--toggle-collect=nlm_encode_block", sys.executable, "-c", CHILD, path, str(nbytes), str(adapt)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-3000:])
        raise SystemExit(f"profile_step: the callgrind run failed (exit {p.returncode})")
    info = json.loads(p.stdout.strip().splitlines()[-1])
    info["rev"] = git_rev()
    with open(out + ".json", "w") as f:
        json.dump(info, f)
    return info, Profile(out)


def git_rev():
    """The checkout's commit, with '+' when csrc/ has changes not committed."""
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "csrc"], capture_output=True,
                           text=True).stdout.strip()
    return rev + ("+" if dirty else "")


def c_line(path_base, line, src_root=None):
    for dirpath, _, files in os.walk(src_root or CSRC):
        if path_base in files:
            with open(os.path.join(dirpath, path_base), encoding="utf-8", errors="replace") as f:
                src = f.readlines()
            return src[line - 1].strip() if 0 < line <= len(src) else ""
    return ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", default="alice29.txt", help="a benchmark file name or a path")
    ap.add_argument("--bytes", type=int, default=40960)
    ap.add_argument("--modes", nargs="+", default=["static", "dynamic"], choices=["static", "dynamic", "heads"])
    ap.add_argument("--simd-cap", type=int, default=None, help="NLMCODEC_SIMD_CAP for the child (0 scalar ...)")
    ap.add_argument("--out", help="append the Markdown section to this file")
    ap.add_argument("--label", default="", help="section title (e.g. before / after)")
    ap.add_argument("--keep", help="keep the callgrind outputs in this folder")
    ap.add_argument("--reuse", action="store_true", help="re-analyse the outputs kept in --keep (no new run)")
    ap.add_argument("--src", help="with --reuse: the csrc folder the kept profile was built from (e.g. "
                                  "`git archive REV csrc | tar -x -C DIR`, then DIR/csrc)")
    ap.add_argument("--top", type=int, default=12, help="rows of the per-function and per-line tables")
    a = ap.parse_args(argv)

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("profile_step: valgrind is not installed (apt-get install -y valgrind); cannot profile",
              file=sys.stderr)
        return 2
    path = a.file
    if not os.path.exists(path):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        from nlmcodec._bench import corpus_dir
        base = corpus_dir()
        hits = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(base, "bench")) for f in fs
                if f == a.file] if base else []
        if not hits:
            print(f"profile_step: cannot find {a.file} (set NLMCODEC_CORPUS)", file=sys.stderr)
            return 2
        path = hits[0]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
        for mode in a.modes:
            info, prof = run_mode(valgrind, path, a.bytes, MODE_CODE[mode], a.simd_cap, a.keep or tmp,
                                  a.reuse and bool(a.keep))
            results[mode] = (info, prof, *attribute(prof, a.src))
    rev = results[a.modes[0]][0].get("rev", "?")   # the code that was profiled (kept with --keep)
    lines = []
    title = f"## {a.label}: " if a.label else "## "
    lines.append(f"{title}{os.path.basename(path)}, first {a.bytes} bytes, default model (commit {rev}, "
                 + ("best SIMD path" if a.simd_cap is None else f"SIMD cap {a.simd_cap}") + ")")
    lines.append("")
    lines.append(f"`python benchmarks/profile_step.py --file {a.file} --bytes {a.bytes}"
                 + (f" --simd-cap {a.simd_cap}" if a.simd_cap is not None else "") + "`")
    lines.append("")
    hdr = "| stage | " + " | ".join(f"{m} Ir/token | {m} %" for m in a.modes) + " |"
    lines.append(hdr)
    lines.append("|" + "---|" * (1 + 2 * len(a.modes)))
    for st in STAGE_ORDER:
        row = [st]
        for m in a.modes:
            info, prof, stages = results[m][0], results[m][1], results[m][2]
            v = stages.get(st, 0)
            row += [f"{v / info['tokens']:,.0f}", f"{100.0 * v / prof.total:.1f}"]
        lines.append("| " + " | ".join(row) + " |")
    row = ["**total**"]
    for m in a.modes:
        info, prof = results[m][0], results[m][1]
        row += [f"**{prof.total / info['tokens']:,.0f}**", "100.0"]
    lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for m in a.modes:
        info = results[m][0]
        lines.append(f"{m}: {info['tokens']:,} tokens, {info['in']:,} -> {info['out']:,} bytes, "
                     f"{results[m][1].total:,} Ir in nlm_encode_block.")
    for m in a.modes:
        info, prof, _stages, funcs, byline = results[m]
        lines.append("")
        lines.append(f"Top C functions ({m}, self Ir per token; inlined static functions under their own name):")
        lines.append("")
        lines.append("| file | function | Ir/token |")
        lines.append("|---|---|---|")
        for (base, fn), ir in sorted(funcs.items(), key=lambda kv: -kv[1])[:a.top]:
            lines.append(f"| {base} | {fn} | {ir / info['tokens']:,.0f} |")
        lines.append("")
        lines.append(f"Top lines of lm.c and elman.c ({m}, self Ir per token):")
        lines.append("")
        lines.append("| line | Ir/token | source |")
        lines.append("|---|---|---|")
        el = [(k, v) for k, v in byline.items() if k[0] in ("lm.c", "elman.c")]
        for (base, ln), ir in sorted(el, key=lambda kv: -kv[1])[:a.top]:
            src = c_line(base, ln, a.src).replace("|", "\\|")
            lines.append(f"| {base}:{ln} | {ir / info['tokens']:,.0f} | `{src}` |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
