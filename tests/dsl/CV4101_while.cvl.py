# Error corpus: CV4101_while. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4101 8:5 FunctionDef[m]>While
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    i = 0
    while i < 3:
        x = cvl.relu(x)
        i += 1
    return x
