# Error corpus: CV3204_symbolic_dim. Expected diagnostics, in order (code line:col AST-path):
# expect: CV3204 7:20 FunctionDef[m]>For>Call[range]>arg[0]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    for i in range(x.shape[0]):
        x = cvl.relu(x)
    return x
