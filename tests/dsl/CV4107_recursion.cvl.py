# Error corpus: CV4107_recursion. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4107 8:12 FunctionDef[deep]>Return>Call[deep]
import cuvil as cvl

def deep(x, n):
    if n == 0:
        return x
    return deep(cvl.relu(x), n - 1)

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    return deep(x, 3)
