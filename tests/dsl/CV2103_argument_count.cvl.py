# Error corpus: CV2103_argument_count. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2103 10:19 FunctionDef[m]>Return>Call[act]>arg[1]
import cuvil as cvl

def act(x):
    return cvl.relu(x)

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    return act(x, x)
