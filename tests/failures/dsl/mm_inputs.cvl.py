# failure: CV3102 FunctionDef>Assign>BinOp[@] @ 6:9
import cuvil as cvl

@cvl.model(input_shapes=[("N", 64), (32, 10)])
def mm_inputs(x, w):
    y = x @ w
    return cvl.relu(y)
