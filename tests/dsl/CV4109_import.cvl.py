# Error corpus: CV4109_import. Expected diagnostics, in order (code line:col AST-path):
# expect: CV4109 4:8 Import>alias[torch.nn.functional]
import cuvil as cvl
import torch.nn.functional as F

@cvl.model(input_shapes=[("N", 4)])
def m(x):
    return cvl.relu(x)
