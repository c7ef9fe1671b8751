# Error corpus: CV4105_lambda. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4105 7:11 FunctionDef[m]>Assign>Lambda
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    act = lambda t: cvl.relu(t)
    return act(x)
