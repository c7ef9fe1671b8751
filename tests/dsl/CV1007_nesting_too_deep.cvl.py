# Error corpus: CV1007_nesting_too_deep. Expected diagnostics, in order (code line:col AST-path):
# expect: CV1007 6:69 Module>Bracket
# expect: CV1002 6:70 Assign caused-by=1
import cuvil as cvl

K = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))

