# Error corpus: CV2101_undefined_name. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2101 9:24 FunctionDef[m]>Return>Call[cvl.sigmoid]>arg[0]
# message: did you mean 'hidden'?
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(features):
    hidden = cvl.relu(features)
    return cvl.sigmoid(hiden)
