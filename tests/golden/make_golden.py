#!/usr/bin/python3
"""Writes tests/golden/tiny_<pos>.h5: a tiny lexp-shaped transformer in PyTorch (float64), its weights,
inputs, logits, loss and every gradient, for the C++ golden test (tests/nn/golden_test.cc); and
tests/golden/adamw_trajectory.h5: twelve steps of training it with AdamW, clipping and the warm-up /
cosine schedule, every parameter and the loss after each step.

Run only to regenerate, with Debian's python3-torch and python3-h5py:
    /usr/bin/python3 tests/golden/make_golden.py
The model mirrors nn/model/transformer.h: pre-LN blocks, fused qkv weight stored [in, out] with column
blocks q | k | v, heads as column slices, causal softmax(q.k/sqrt(D) + bias), exact GELU, LayerNorm
eps 1e-5, final LayerNorm, untied head, mean cross-entropy over masked positions. Positions: RoPE with
half-split pairs (k, k+D/2), base 10000, or ALiBi with the reference slopes.
"""
import math
import os

import h5py
import torch

torch.manual_seed(1234)
V, C, H, L, F, B, T = 11, 16, 2, 2, 24, 2, 7
D = C // H


def alibi_slopes(h):
    if math.log2(h).is_integer():
        s = 2.0 ** (-8.0 / h)
        return [s ** (i + 1) for i in range(h)]
    c = 2 ** int(math.floor(math.log2(h)))
    return alibi_slopes(c) + alibi_slopes(2 * c)[::2][: h - c]


def make_params():
    p = {"tok_emb": torch.randn(V, C)}
    for l in range(L):
        n = f"layer{l}"
        p[f"{n}.ln1.g"] = 1 + 0.1 * torch.randn(C)
        p[f"{n}.ln1.b"] = 0.1 * torch.randn(C)
        p[f"{n}.attn.qkv.w"] = torch.randn(C, 3 * C) / math.sqrt(C)
        p[f"{n}.attn.qkv.b"] = 0.1 * torch.randn(3 * C)
        p[f"{n}.attn.proj.w"] = torch.randn(C, C) / math.sqrt(C)
        p[f"{n}.attn.proj.b"] = 0.1 * torch.randn(C)
        p[f"{n}.ln2.g"] = 1 + 0.1 * torch.randn(C)
        p[f"{n}.ln2.b"] = 0.1 * torch.randn(C)
        p[f"{n}.mlp.fc1.w"] = torch.randn(C, F) / math.sqrt(C)
        p[f"{n}.mlp.fc1.b"] = 0.1 * torch.randn(F)
        p[f"{n}.mlp.fc2.w"] = torch.randn(F, C) / math.sqrt(F)
        p[f"{n}.mlp.fc2.b"] = 0.1 * torch.randn(C)
    p["ln_f.g"] = 1 + 0.1 * torch.randn(C)
    p["ln_f.b"] = 0.1 * torch.randn(C)
    p["head.w"] = torch.randn(C, V) / math.sqrt(C)
    p["head.b"] = 0.1 * torch.randn(V)
    return {k: v.double().requires_grad_(True) for k, v in p.items()}


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5) * g + b


def rope(x):  # x: (B, H, T, D), half-split pairs
    theta = 10000.0 ** (-torch.arange(D // 2, dtype=torch.float64) * 2 / D)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * theta[None, :]
    c, s = ang.cos(), ang.sin()
    a, b = x[..., : D // 2], x[..., D // 2:]
    return torch.cat([a * c - b * s, a * s + b * c], dim=-1)


def forward(p, tokens, pos):
    x = p["tok_emb"][tokens]  # (B, T, C)
    i = torch.arange(T)
    causal = torch.where(i[None, :] <= i[:, None], 0.0, float("-inf")).double()
    for l in range(L):
        n = f"layer{l}"
        h = layer_norm(x, p[f"{n}.ln1.g"], p[f"{n}.ln1.b"])
        qkv = h @ p[f"{n}.attn.qkv.w"] + p[f"{n}.attn.qkv.b"]
        q, k, v = (qkv[..., j * C:(j + 1) * C].reshape(B, T, H, D).transpose(1, 2) for j in range(3))
        bias = causal[None]
        if pos == "rope":
            q, k = rope(q), rope(k)
        else:
            m = torch.tensor(alibi_slopes(H), dtype=torch.float64)[:, None, None]
            bias = bias - m * (i[:, None] - i[None, :]).clamp(min=0).double()
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + bias, dim=-1)
        o = (a @ v).transpose(1, 2).reshape(B, T, C)
        x = x + o @ p[f"{n}.attn.proj.w"] + p[f"{n}.attn.proj.b"]
        h = layer_norm(x, p[f"{n}.ln2.g"], p[f"{n}.ln2.b"])
        f = torch.nn.functional.gelu(h @ p[f"{n}.mlp.fc1.w"] + p[f"{n}.mlp.fc1.b"])
        x = x + f @ p[f"{n}.mlp.fc2.w"] + p[f"{n}.mlp.fc2.b"]
    x = layer_norm(x, p["ln_f.g"], p["ln_f.b"])
    return x @ p["head.w"] + p["head.b"]


# The training loop of experiments/training/trainer.cc in its own words: AdamW (torch.optim.AdamW, one
# parameter group, decoupled weight decay), global gradient-norm clipping (clip_grad_norm_), and the
# learning rate of step s (0-based): lr (s+1)/warmup during the warm-up, then a cosine from lr to
# min_ratio lr over the remaining steps.
ADAM = dict(lr=3e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
CLIP, WARMUP, TOTAL, MIN_RATIO, STEPS = 0.5, 4, 12, 0.1, 12


def scheduled_lr_factor(s):
    if s < WARMUP:
        return (s + 1) / WARMUP
    t = min(1.0, (s - WARMUP) / max(1, TOTAL - WARMUP))
    return MIN_RATIO + (1 - MIN_RATIO) * 0.5 * (1 + math.cos(math.pi * t))


def write_trajectory(here):
    """tests/golden/adamw_trajectory.h5: 12 steps of training the rope model in float64, the loss,
    learning rate and gradient norm before clipping of every step, and every parameter after it."""
    p = make_params()
    start = {k: v.detach().clone() for k, v in p.items()}
    opt = torch.optim.AdamW(list(p.values()), **ADAM)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, scheduled_lr_factor)
    batches, losses, lrs, norms, after = [], [], [], [], []
    for step in range(STEPS):
        tokens = torch.randint(0, V, (B, T))
        targets = torch.randint(0, V, (B, T))
        mask = (torch.rand(B, T) < 0.7).long()
        mask[:, -1] = 1
        batches.append((tokens, targets, mask))
        opt.zero_grad()
        logits = forward(p, tokens, "rope")
        per_token = torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction="none")
        loss = (per_token * mask.reshape(-1)).sum() / mask.sum()
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(p.values()), CLIP)))
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
        losses.append(float(loss))
        after.append({k: v.detach().clone() for k, v in p.items()})
    with h5py.File(os.path.join(here, "adamw_trajectory.h5"), "w") as f:
        f.attrs["generator"] = "tests/golden/make_golden.py"
        f.attrs["torch_version"] = str(torch.__version__)
        for k, v in dict(vocab=V, d_model=C, n_heads=H, n_layers=L, d_ff=F, batch=B, seq=T,
                         steps=STEPS, warmup_steps=WARMUP, total_steps=TOTAL).items():
            f.attrs[k] = v
        for k, v in dict(lr=ADAM["lr"], beta1=ADAM["betas"][0], beta2=ADAM["betas"][1], eps=ADAM["eps"],
                         weight_decay=ADAM["weight_decay"], clip_norm=CLIP, min_lr_ratio=MIN_RATIO).items():
            f.attrs[k] = v
        f["tokens"] = torch.stack([b[0].reshape(-1) for b in batches]).numpy().astype("int64")
        f["targets"] = torch.stack([b[1].reshape(-1) for b in batches]).numpy().astype("int64")
        f["mask"] = torch.stack([b[2].reshape(-1) for b in batches]).numpy().astype("int64")
        f["loss"] = torch.tensor(losses, dtype=torch.float64).numpy()
        f["lr"] = torch.tensor(lrs, dtype=torch.float64).numpy()
        f["grad_norm"] = torch.tensor(norms, dtype=torch.float64).numpy()
        for k, v in start.items():
            f[f"params/{k}"] = v.reshape(-1).numpy()
            f[f"after/{k}"] = torch.stack([a[k].reshape(-1) for a in after]).numpy()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    tokens = torch.randint(0, V, (B, T))
    targets = torch.randint(0, V, (B, T))
    mask = (torch.rand(B, T) < 0.6).long()
    mask[0, -1] = 1
    for pos in ("rope", "alibi"):
        p = make_params()
        logits = forward(p, tokens, pos)
        per_token = torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction="none")
        loss = (per_token * mask.reshape(-1)).sum() / mask.sum()
        loss.backward()
        with h5py.File(os.path.join(here, f"tiny_{pos}.h5"), "w") as f:
            f.attrs["generator"] = "tests/golden/make_golden.py"
            f.attrs["torch_version"] = str(torch.__version__)
            f.attrs["pos"] = pos
            for k, v in dict(vocab=V, d_model=C, n_heads=H, n_layers=L, d_ff=F, batch=B, seq=T).items():
                f.attrs[k] = v
            f["tokens"] = tokens.reshape(-1).numpy().astype("int64")
            f["targets"] = targets.reshape(-1).numpy().astype("int64")
            f["mask"] = mask.reshape(-1).numpy().astype("int64")
            f["logits"] = logits.detach().reshape(B * T, V).numpy()
            f["loss"] = loss.detach().reshape(1).numpy()
            for k, v in p.items():
                f[f"params/{k}"] = v.detach().reshape(-1).numpy()
                f[f"grads/{k}"] = v.grad.reshape(-1).numpy()
    write_trajectory(here)  # after the single-step files, whose random draws it must not shift


if __name__ == "__main__":
    main()
