# failure: CV1003 Module>Token[string] @ 7:26
# derived: 2 (errors caused by the root: folded under it, never roots)
import cuvil as cvl

@cvl.model(input_shapes=[("N", 64)])
def string_a(x):
    y = cvl.relu(x, name="first)
    return cvl.softmax(y, axis=-1)
