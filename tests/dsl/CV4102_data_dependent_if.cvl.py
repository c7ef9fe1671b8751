# Error corpus: CV4102_data_dependent_if. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4102 7:8 FunctionDef[m]>If>Compare[>]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    if cvl.reduce_max(x) > 0:
        x = cvl.relu(x)
    return x
