# failure: CV2102 FunctionDef>Assign>Call>Attribute @ 6:9
import cuvil as cvl

@cvl.model(input_shapes=[("N", 64)])
def op_relux(x):
    h = cvl.relux(x)
    return cvl.softmax(h, axis=-1)
