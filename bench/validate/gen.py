#!/usr/bin/env python3
"""Writes a CU-IR module of about N ops (default 10,000) and the weights it
names: a deep residual CNN with a symbolic batch, weights params, inline
constants and a loc() on every op, the shape of what the front ends produce.

usage: gen.py OUT_DIR [N_OPS]   ->  OUT_DIR/big.cuir, OUT_DIR/gen.safetensors
"""
import json
import os
import struct
import sys

C, HW = 8, 16   # channels and spatial size of every block


def write_safetensors(path, tensors):
    """tensors: list of (name, shape); all f32 zeros."""
    header, offset = {}, 0
    for name, shape in tensors:
        n = 4
        for d in shape:
            n *= d
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        f.write(bytes(offset))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    n_ops = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    blocks = max(1, (n_ops - 3) // 5)
    act = f"f32[N,{C},{HW},{HW}]"
    tensors, lines = [], []
    w = lines.append
    w("cuir 1\n")
    w(f"model @resnet_gen(%x: {act}) -> (f32[N,10]) {{\n")
    for b in range(blocks):
        w(f'  param %w{b}: f32[{C},{C},3,3] = weights("gen.safetensors", "block{b}.conv.weight")\n')
        w(f'  param %b{b}: f32[{C}] = weights("gen.safetensors", "block{b}.conv.bias")\n')
        w(f"  param %s{b}: f32[1] = dense({1.0 + b / 1024})\n")
        tensors += [(f"block{b}.conv.weight", [C, C, 3, 3]), (f"block{b}.conv.bias", [C])]
    w(f'  param %fc: f32[{C},10] = weights("gen.safetensors", "fc.weight")\n')
    tensors.append(("fc.weight", [C, 10]))
    h = "%x"
    for b in range(blocks):
        loc = f'loc("resnet_gen.cvl.py":{10 + b}:9)'
        w(f"  %c{b} = conv2d({h}, %w{b}, %b{b}) {{stride=[1,1], pad=[1,1,1,1]}} : {act}  {loc}\n")
        w(f"  %r{b} = relu(%c{b}) : {act}  {loc}\n")
        w(f"  %a{b} = add(%r{b}, {h}) : {act}  {loc}\n")
        w(f"  %m{b} = mul(%a{b}, %s{b}) : {act}  {loc}\n")
        w(f"  %h{b} = clip(%m{b}) {{min=0.0, max=6.0}} : {act}  {loc}\n")
        h = f"%h{b}"
    w(f"  %pool = global_avg_pool({h}) : f32[N,{C},1,1]\n")
    w(f"  %flat = flatten(%pool) {{axis=1}} : f32[N,{C}]\n")
    w("  %logits = matmul(%flat, %fc) : f32[N,10]\n")
    w("  return %logits\n}\n")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "big.cuir"), "w") as f:
        f.write("".join(lines))
    write_safetensors(os.path.join(out_dir, "gen.safetensors"), tensors)


if __name__ == "__main__":
    main()
