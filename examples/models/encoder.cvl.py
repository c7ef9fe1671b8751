"""A small transformer encoder over a sequence of any length L: an input
projection of 16 features to d = 32, two pre-norm layers (LayerNorm,
4-head self-attention as one fused cvl.attention, residual; LayerNorm,
GELU MLP, residual), a final LayerNorm and a linear head of 8 outputs.
One artifact serves every batch N and length L."""
import cuvil as cvl

FEATURES, D, HEADS, FF, OUT = 16, 32, 4, 64, 8
LAYERS = 2


def linear(x, p):
    return x @ p.weight.T + p.bias


def self_attention(x, p):
    # [N, L, D] -> [N, L, HEADS, D / HEADS]: read and written in that order
    # (bshd), so the heads need no transposes.
    q, k, v = [cvl.reshape(linear(x, w), (0, 0, HEADS, D // HEADS)) for w in (p.q, p.k, p.v)]
    y = cvl.attention(q, k, v, bshd=[1, 1, 1, 1])
    return linear(cvl.reshape(y, (0, 0, D)), p.out)


@cvl.model(input_shapes=[("N", "L", FEATURES)], weights="encoder.safetensors")
def encoder(x, p):
    h = linear(x, p.proj)
    for i in range(LAYERS):
        blk = p.layers[i]
        h = h + self_attention(cvl.layer_norm(h, blk.ln1.weight, blk.ln1.bias, axis=-1), blk.attn)
        m = cvl.layer_norm(h, blk.ln2.weight, blk.ln2.bias, axis=-1)
        h = h + linear(cvl.gelu(linear(m, blk.fc1)), blk.fc2)
    return linear(cvl.layer_norm(h, p.norm.weight, p.norm.bias, axis=-1), p.head)
