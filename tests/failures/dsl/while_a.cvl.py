# failure: CV4101 FunctionDef>While @ 7:5
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def while_a(x):
    i = 0
    while i < 3:
        x = cvl.relu(x)
        i += 1
    return x
