# failure: CV2102 FunctionDef>Assign>Call>Attribute @ 6:21
import cuvil as cvl

@cvl.model(input_shapes=[("N", 8, 4, 4)])
def op_nested(x):
    y = cvl.flatten(cvl.avgpool2d(x, 2), 1)
    return y
