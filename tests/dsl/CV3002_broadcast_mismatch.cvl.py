# Error corpus: CV3002_broadcast_mismatch. Expected diagnostics, in order (code line:col AST-path):
# expect: CV3002 8:12 FunctionDef[m]>Return>BinOp[+]
# message: f32[N,4] and f32[N,3]
import cuvil as cvl

@cvl.model(input_shapes=[("N", 4), ("N", 3)])
def m(a, b):
    return a + b
