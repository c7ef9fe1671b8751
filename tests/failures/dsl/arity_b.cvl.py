# failure: CV2103 FunctionDef>Assign>Call[cvl.relu]>arg[1] @ 7:25
import cuvil as cvl

@cvl.model(input_shapes=[("N", 8), ("N", 8)])
def arity_b(a, b):
    for _ in range(2):
        a = cvl.relu(a, b)
    return a
