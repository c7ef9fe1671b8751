# Error corpus: CV1202_unindent_mismatch. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1202 9:7 Module>Indent
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    if True:
        y = cvl.relu(x)
      return y
