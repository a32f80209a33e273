# SPDX-License-Identifier: MIT
"""The models of the end-to-end tests, written as PyTorch users write them:
a Llama-style decoder layer and a GPT-2-style MLP block."""

import math

import torch
import torch.nn.functional as F


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


class LlamaDecoderLayer(torch.nn.Module):
    """RMSNorm, QKV projections, causal attention, output projection,
    residual, RMSNorm, SwiGLU MLP, residual."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads, self.d = heads, d
        self.input_norm = RMSNorm(d)
        self.q_proj = torch.nn.Linear(d, d, bias=False)
        self.k_proj = torch.nn.Linear(d, d, bias=False)
        self.v_proj = torch.nn.Linear(d, d, bias=False)
        self.o_proj = torch.nn.Linear(d, d, bias=False)
        self.post_norm = RMSNorm(d)
        self.gate_proj = torch.nn.Linear(d, ffn, bias=False)
        self.up_proj = torch.nn.Linear(d, ffn, bias=False)
        self.down_proj = torch.nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        b, s, d = x.size(0), x.size(1), self.d  # traceable by torch.fx
        hd = d // self.heads
        h = self.input_norm(x)
        q = self.q_proj(h).view(b, s, self.heads, hd).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.heads, hd).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.heads, hd).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
        mask = torch.full_like(scores, float("-inf")).triu(1)  # causal
        attn = torch.softmax(scores + mask, dim=-1)
        o = (attn @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.o_proj(o)
        h = self.post_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class LlamaSDPA(LlamaDecoderLayer):
    """The same layer as torch 2.x code writes it: nn.RMSNorm modules and
    F.scaled_dot_product_attention(is_causal=True) (torch >= 2.4)."""

    def __init__(self, d, heads, ffn):
        super().__init__(d, heads, ffn)
        self.input_norm = torch.nn.RMSNorm(d, eps=1e-6)
        self.post_norm = torch.nn.RMSNorm(d, eps=1e-6)
        with torch.no_grad():
            self.input_norm.weight.copy_(1 + 0.1 * torch.randn(d))
            self.post_norm.weight.copy_(1 + 0.1 * torch.randn(d))

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        h = self.input_norm(x)
        q, k, v = (p(h).view(b, s, self.heads, hd).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(o.transpose(1, 2).reshape(b, s, d))
        h = self.post_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class GPT2MLP(torch.nn.Module):
    """GPT-2's MLP block: LayerNorm (ln_2), c_fc, GELU, c_proj, residual."""

    def __init__(self, d, ffn):
        super().__init__()
        self.ln_2 = torch.nn.LayerNorm(d)
        with torch.no_grad():  # not the identity of a fresh LayerNorm
            self.ln_2.weight.copy_(1 + 0.1 * torch.randn(d))
            self.ln_2.bias.copy_(0.1 * torch.randn(d))
        self.c_fc = torch.nn.Linear(d, ffn)
        self.c_proj = torch.nn.Linear(ffn, d)

    def forward(self, x):
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT2Block(torch.nn.Module):
    """GPT-2's block as nanoGPT writes it: ln_1, the fused QKV projection
    c_attn split in three (qkv.split(d, dim=2)), the heads, causal
    attention masked from a registered tril buffer, c_proj and the
    residual, then ln_2, the MLP (c_fc, GELU, c_proj), residual.  The
    exact GELU: an ONNX export writes the tanh form's constants in
    float32, which alone puts it 1e-8 from PyTorch's float64 values."""

    def __init__(self, d, heads, ffn, seq):
        super().__init__()
        self.heads, self.d = heads, d
        self.ln_1 = torch.nn.LayerNorm(d)
        self.c_attn = torch.nn.Linear(d, 3 * d)
        self.c_proj = torch.nn.Linear(d, d)
        self.ln_2 = torch.nn.LayerNorm(d)
        self.c_fc = torch.nn.Linear(d, ffn)
        self.mlp_proj = torch.nn.Linear(ffn, d)
        with torch.no_grad():  # not the identity of a fresh LayerNorm
            for ln in (self.ln_1, self.ln_2):
                ln.weight.copy_(1 + 0.1 * torch.randn(d))
                ln.bias.copy_(0.1 * torch.randn(d))
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(self.d, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class MaskAttn(torch.nn.Module):
    """Causal attention masked from registered buffers in three
    spellings (style): nanoGPT's masked_fill(bias[:, :, :T, :T] == 0,
    -inf), Hugging Face GPT-2's torch.where(bias.bool(), s, finfo.min)
    and an additive -inf buffer."""

    def __init__(self, style, T=16):
        super().__init__()
        self.style = style
        self.q, self.k, self.v = (torch.nn.Linear(32, 32, bias=False) for _ in range(3))
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))
        self.register_buffer("add_mask", torch.full((T, T), float("-inf")).triu(1))

    def forward(self, x):
        B, T, C = x.size(0), x.size(1), x.size(2)  # traceable by torch.fx
        q, k, v = (p(x).view(B, T, 2, C // 2).transpose(1, 2)
                   for p in (self.q, self.k, self.v))
        att = (q @ k.transpose(-2, -1)) * (k.size(-1) ** -0.5)
        if self.style == "nanogpt":
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        elif self.style == "hf":
            keep = self.bias[:, :, :T, :T].bool()
            att = torch.where(keep, att, torch.finfo(torch.float32).min)
        else:
            att = att + self.add_mask[:T, :T]
        y = F.softmax(att, dim=-1) @ v
        return y.transpose(1, 2).contiguous().view(B, T, C)


# (batch, sequence, hidden, heads, ffn) of the two sizes the tests use.
LLAMA_SIZES = [(1, 8, 32, 2, 64), (2, 16, 64, 4, 128)]
GPT2_SIZES = [(1, 8, 32, 128), (2, 16, 64, 256)]
GPT2_BLOCK_SIZES = [(1, 8, 32, 2, 128), (2, 16, 64, 4, 256)]
