# failure: CV3101 FunctionDef>Return>Call[cvl.conv2d] @ 7:12
# derived: 1 (errors caused by the root: folded under it, never roots)
"""A helper used twice with two wrong kernels: one root, one derived error."""
import cuvil as cvl

def block(x, w):
    return cvl.conv2d(x, w, padding=1)

@cvl.model(input_shapes=[("N", 3, 16, 16), (8, 4, 3, 3), (8, 5, 3, 3)])
def helper_a(x, w1, w2):
    a = block(x, w1)
    b = block(x, w2)
    return a
