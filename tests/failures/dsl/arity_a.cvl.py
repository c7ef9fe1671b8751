# failure: CV2103 FunctionDef>Assign>Call[cvl.relu]>arg[1] @ 6:21
import cuvil as cvl

@cvl.model(input_shapes=[("N", 64)])
def arity_a(x):
    y = cvl.relu(x, x)
    return y
