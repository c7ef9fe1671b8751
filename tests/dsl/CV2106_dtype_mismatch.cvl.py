# Error corpus: CV2106_dtype_mismatch. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2106 7:12 FunctionDef[m]>Return>BinOp[*]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4)], dtype="int32")
def m(tokens):
    return tokens * 0.5
