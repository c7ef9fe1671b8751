# failure: CV3006 FunctionDef>Return>Call[cvl.softmax] @ 6:12
import cuvil as cvl

@cvl.model(input_shapes=[("N", 10)])
def axis_a(x):
    return cvl.softmax(x, axis=2)
