# failure: CV3002 FunctionDef>Assign>BinOp[+] @ 8:11
"""A residual connection between tensors of different widths."""
import cuvil as cvl

@cvl.model(input_shapes=[("N", 64), ("N", 32)])
def add_residual(x, skip):
    h = cvl.relu(x)
    out = h + skip
    return out
