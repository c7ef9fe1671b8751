# Error corpus: CV1010_unexpected_eof. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1010 6:1 FunctionDef
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)])
