# failure: CV4101 FunctionDef>While @ 9:5
import cuvil as cvl

LAYERS = 2

@cvl.model(input_shapes=[("N", 16)])
def while_b(x):
    n = LAYERS
    while n:
        x = cvl.tanh(x)
        n -= 1
    return x
