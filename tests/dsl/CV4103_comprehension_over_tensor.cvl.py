# Error corpus: CV4103_comprehension_over_tensor. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4103 7:34 FunctionDef[m]>Assign>ListComp>comprehension>Name[x]
import cuvil as cvl

@cvl.model(input_shapes=[(4, 4)])
def m(x):
    rows = [cvl.relu(r) for r in x]
    return cvl.concat(rows, axis=0)
