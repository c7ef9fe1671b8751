# failure: CV2102 FunctionDef>Assign>Call>Attribute @ 8:9
# failure: CV2101 FunctionDef>Return>Call[cvl.softmax]>arg[0] @ 10:24
"""Two independent mistakes: two roots, each in the pattern of its kind."""
import cuvil as cvl

@cvl.model(input_shapes=[("N", 10)])
def combo(x):
    h = cvl.sigmoidd(x)
    y = cvl.relu(x)
    return cvl.softmax(yy, axis=-1)
