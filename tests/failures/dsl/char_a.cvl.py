# failure: CV1001 Module>Token @ 7:21
# derived: 1 (errors caused by the root: folded under it, never roots)
import cuvil as cvl

@cvl.model(input_shapes=[("N", 64)])
def char_a(x):
    y = cvl.relu(x) $ 2
    return y
