# failure: CV3101 FunctionDef>Return>Call[cvl.conv2d] @ 7:12
# derived: 1 (errors caused by the root: folded under it, never roots)
import cuvil as cvl

def stage(t, kernel):
    t = cvl.relu(t)
    return cvl.conv2d(t, kernel)

@cvl.model(input_shapes=[("N", 1, 8, 8), (4, 2, 3, 3), (4, 3, 3, 3)])
def helper_b(img, k1, k2):
    return stage(img, k1) + stage(img, k2)
