#!/usr/bin/python3
"""lexp's PyTorch reference for `lexp bench --compare` (written for lexp, configurations as in bench.cc).

The same decoder-only model as lexp's benchmark: token embedding (vocab 32, no absolute positions),
pre-LayerNorm blocks (fused qkv Linear, explicit causal softmax attention with RoPE (half-split pairs,
base 10000) or ALiBi, output Linear, GELU MLP), final LayerNorm, untied head, next-token cross-entropy
on uniform random tokens, AdamW(lr=1e-3, weight_decay=0.01). Prints one JSON line per measurement.
--precision bf16 runs the model under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's mixed
precision (bf16 matrix products, fp32 weights and optimizer state): the speed counterpart of lexp's
model.precision = "bf16", not its numerics (here the rotation of bf16 q, k by fp32 tables runs in
fp32, and products return bf16).

Thread settings must be in the environment before torch loads, so they are applied first, and so is
OpenBLAS's core: on an AVX-512 CPU for which OpenBLAS picks a core without AVX-512 kernels (Debian's
0.3.21 takes an Emerald Rapids Xeon for a Prescott, SSE3 kernels), its SkylakeX kernels are forced,
unless the caller set OPENBLAS_CORETYPE (lexp bench sets Haswell for its avx2 preset and passes no
other); the JSON line's "blas_core" says which core ran. --selftest checks that decision without
torch.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

SIZES = {"T": (64, 4, 2, 256), "S": (256, 8, 4, 1024)}
CONFIGS = {  # name: (size, batch, sequence, mode)
    "T": ("T", 64, 64, "train"),
    "S": ("S", 32, 128, "train"),
    "E512": ("S", 16, 512, "eval"),
    "E2048": ("S", 4, 2048, "eval"),
    "E8192": ("S", 1, 8192, "eval"),
}


def parse():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--config", choices=sorted(CONFIGS), required=True)
    p.add_argument("--pos", choices=["rope", "alibi"], default="rope")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--json", default="-")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    return p.parse_args()


# OpenBLAS's cores with AVX-512 kernels (openblas_get_corename, lower case). On an AVX-512 CPU,
# an older core's kernels run far below their best: measured with 2 threads, SSE3 kernels
# (Prescott) on an Emerald Rapids Xeon 33 against 165 GFLOP/s on a 1024^3 product; AVX2 kernels
# (Haswell) on a Zen 5 EPYC make the reference's T step 1.2x and its S step 1.55x slower than
# SkylakeX's.
AVX512_CORES = {"skylakex", "cooperlake", "sapphirerapids"}


def openblas_core():
    """The core OpenBLAS picks in a fresh process (it reads OPENBLAS_CORETYPE when it loads)."""
    probe = ("import ctypes\n"
             "f = ctypes.CDLL('libblas.so.3').openblas_get_corename\n"
             "f.restype = ctypes.c_char_p\n"
             "print(f().decode())")
    try:
        run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    return run.stdout.strip() if run.returncode == 0 else ""  # "": the BLAS is not OpenBLAS


def cpu_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return all(x in flags for x in ("avx512f", "avx512dq", "avx512bw", "avx512vl"))


def forced_openblas_core(detected, caller_set, avx512):
    """At its best: an AVX-512 CPU for which OpenBLAS picked a core without AVX-512 kernels gets
    OpenBLAS's SkylakeX kernels. A core set by the caller (OPENBLAS_CORETYPE, as lexp's avx2 preset
    sets Haswell) is kept; "" (the BLAS is not OpenBLAS) is left alone."""
    if caller_set or not avx512 or not detected or detected.lower() in AVX512_CORES:
        return None
    return "SkylakeX"


def choose_openblas_core():
    detected = openblas_core()
    forced = forced_openblas_core(detected, "OPENBLAS_CORETYPE" in os.environ, cpu_has_avx512())
    if forced:
        os.environ["OPENBLAS_CORETYPE"] = forced
        return "%s (forced: OpenBLAS took this CPU for a %s)" % (forced, detected)
    return detected


def selftest():
    """The core decision, without torch (ctest: Bench.ReferenceForcesAvx512KernelsWhereOpenBlasPickedNone)."""
    cases = [  # detected, caller set OPENBLAS_CORETYPE, CPU has AVX-512 -> forced core
        ("Prescott", False, True, "SkylakeX"),   # Emerald Rapids under OpenBLAS 0.3.21
        ("Generic", False, True, "SkylakeX"),
        ("Prescott", True, True, None),          # the avx2 preset's Haswell cap is kept
        ("Prescott", False, False, None),        # an old CPU: nothing better to force
        ("Haswell", False, True, "SkylakeX"),    # AVX2 kernels on an AVX-512 CPU
        ("Zen", False, True, "SkylakeX"),
        ("Haswell", False, False, None),         # an AVX2 CPU: its own core
        ("Haswell", True, True, None),
        ("SkylakeX", False, True, None),
        ("Cooperlake", False, True, None),
        ("SapphireRapids", False, True, None),
        ("", False, True, None),                 # not OpenBLAS
    ]
    bad = [(c, forced_openblas_core(*c[:3])) for c in cases if forced_openblas_core(*c[:3]) != c[3]]
    for case, got in bad:
        print("selftest: %r gave %r" % (case, got))
    print("selftest: %d of %d cases right" % (len(cases) - len(bad), len(cases)))
    return 1 if bad else 0


if "--selftest" in sys.argv[1:]:
    sys.exit(selftest())


ARGS = parse()
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
BLAS_CORE = choose_openblas_core()
import torch  # noqa: E402

torch.set_num_threads(ARGS.threads)
VOCAB = 32


def slopes(h):
    if math.log2(h).is_integer():
        first = 2.0 ** (-8.0 / h)
        return [first ** (i + 1) for i in range(h)]
    c = 2 ** int(math.floor(math.log2(h)))
    return slopes(c) + slopes(2 * c)[::2][: h - c]


class Model(torch.nn.Module):
    def __init__(self, c, heads, layers, ff, pos, seq):
        super().__init__()
        self.c, self.heads, self.d, self.pos = c, heads, c // heads, pos
        self.emb = torch.nn.Embedding(VOCAB, c)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(torch.nn.ModuleDict({
                "ln1": torch.nn.LayerNorm(c), "qkv": torch.nn.Linear(c, 3 * c),
                "out": torch.nn.Linear(c, c), "ln2": torch.nn.LayerNorm(c),
                "up": torch.nn.Linear(c, ff), "down": torch.nn.Linear(ff, c)}))
        self.lnf = torch.nn.LayerNorm(c)
        self.head = torch.nn.Linear(c, VOCAB)
        t = torch.arange(seq, dtype=torch.float32)
        causal = torch.full((seq, seq), float("-inf")).triu(1)
        if pos == "rope":
            theta = 10000.0 ** (-torch.arange(self.d // 2, dtype=torch.float32) * 2.0 / self.d)
            ang = t[:, None] * theta[None, :]
            self.register_buffer("cos", ang.cos())
            self.register_buffer("sin", ang.sin())
            self.register_buffer("bias", causal)
        else:
            dist = (t[:, None] - t[None, :]).clamp(min=0)
            m = torch.tensor(slopes(heads))[:, None, None]
            self.register_buffer("bias", causal[None] - m * dist[None])

    def rotate(self, x):
        h = self.d // 2
        a, b = x[..., :h], x[..., h:]
        return torch.cat([a * self.cos - b * self.sin, a * self.sin + b * self.cos], dim=-1)

    def forward(self, tokens):
        bsz, seq = tokens.shape
        x = self.emb(tokens)
        for blk in self.blocks:
            q, k, v = blk["qkv"](blk["ln1"](x)).view(bsz, seq, 3, self.heads, self.d).permute(2, 0, 3, 1, 4)
            if self.pos == "rope":
                q, k = self.rotate(q), self.rotate(k)
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.d) + self.bias, dim=-1)
            x = x + blk["out"]((att @ v).transpose(1, 2).reshape(bsz, seq, self.c))
            x = x + blk["down"](torch.nn.functional.gelu(blk["up"](blk["ln2"](x))))
        return self.head(self.lnf(x))


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def main():
    size, batch, seq, mode = CONFIGS[ARGS.config]
    c, heads, layers, ff = SIZES[size]
    torch.manual_seed(0)
    model = Model(c, heads, layers, ff, ARGS.pos, seq)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    gen = torch.Generator().manual_seed(1)

    def one_step():
        tokens = torch.randint(0, VOCAB, (batch, seq + 1), generator=gen)
        start = time.perf_counter()
        if mode == "train":
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=ARGS.precision == "bf16"):
                logits = model(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(
                logits.float().reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        else:
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16,
                                                 enabled=ARGS.precision == "bf16"):
                model(tokens[:, :-1])
        return time.perf_counter() - start

    for _ in range(ARGS.warmup):
        one_step()
    times = [one_step() for _ in range(ARGS.steps)]
    n_mm = layers * (4 * c * c + 2 * c * ff) + c * VOCAB
    fwd = 2 * n_mm * batch * seq + 4 * layers * batch * seq * seq * c
    flops = 3 * fwd if mode == "train" else fwd
    med = statistics.median(times)
    out = {"impl": "torch", "config": ARGS.config, "pos": ARGS.pos, "threads": ARGS.threads,
           "steps": ARGS.steps, "median_s": med, "min_s": min(times), "max_s": max(times),
           "tokens_per_s": batch * seq / med, "gflops": flops / med / 1e9, "peak_rss_mib": peak_rss_mib(),
           "precision": ARGS.precision, "torch": torch.__version__, "blas_core": BLAS_CORE}
    line = json.dumps(out)
    if ARGS.json == "-":
        print(line)
    else:
        with open(ARGS.json, "a") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
