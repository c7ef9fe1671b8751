# Error corpus: CV1201_tab_error. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1201 8:1 Module>Indent
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
def m(x):
        y = cvl.relu(x)
	return y
