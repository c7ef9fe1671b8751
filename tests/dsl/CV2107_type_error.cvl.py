# Error corpus: CV2107_type_error. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2107 9:12 FunctionDef[m]>Return>Call[WIDTH]>Name[WIDTH]
import cuvil as cvl

WIDTH = 4

@cvl.model(input_shapes=[("N", WIDTH)])
def m(x):
    return WIDTH(x)
