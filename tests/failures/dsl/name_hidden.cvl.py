# failure: CV2101 FunctionDef>Return>Call[cvl.softmax]>arg[0] @ 7:24
import cuvil as cvl

@cvl.model(input_shapes=[("N", 10)])
def name_hidden(features):
    hidden = cvl.relu(features)
    return cvl.softmax(hiden, axis=1)
