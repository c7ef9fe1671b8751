# Error corpus: CV4112_data_dependent_loop. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4112 7:16 FunctionDef[m]>For>Name[x]
import cuvil as cvl

@cvl.model(input_shapes=[(3, 4)])
def m(x):
    for row in x:
        x = cvl.relu(x)
    return x
