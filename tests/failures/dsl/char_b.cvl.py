# failure: CV1001 Module>Token @ 8:22
# derived: 1 (errors caused by the root: folded under it, never roots)
import cuvil as cvl

@cvl.model(input_shapes=[("N", 8)])
def char_b(x):
    scale = 2
    return x * scale ? 1
