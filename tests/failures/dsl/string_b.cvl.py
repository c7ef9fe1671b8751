# failure: CV1003 Module>Token[string] @ 5:49
# derived: 2 (errors caused by the root: folded under it, never roots)
import cuvil as cvl

@cvl.model(input_shapes=[("N", 3, 8, 8)], dtype="float32)
def string_b(x):
    return cvl.relu(x)
