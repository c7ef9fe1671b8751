# failure: CV3102 FunctionDef>Assign>BinOp[@] @ 7:22
import cuvil as cvl

@cvl.model(input_shapes=[("N", 16), (16, 16), (8, 4)])
def mm_loop(x, a, b):
    for w in (a, b):
        x = cvl.relu(x @ w)
    return x
