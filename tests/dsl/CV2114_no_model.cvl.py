# Error corpus: CV2114_no_model. Expected diagnostics, in order (code line:col AST-path):
# expect: CV2114 1:1 Module
"""Helpers only: nothing to compile."""
import cuvil as cvl

def act(x):
    return cvl.relu(x)
